"""The floor: the smallest workflows Temporal can run (kept in a module of their own for the sandbox)."""

from datetime import timedelta

from temporalio import activity, workflow


@activity.defn
async def noop() -> None:
    return None


@workflow.defn
class EmptyWorkflow:
    @workflow.run
    async def run(self) -> None:
        return None


@workflow.defn
class ActivityWorkflow:
    @workflow.run
    async def run(self, local: bool) -> None:
        if local:
            await workflow.execute_local_activity(noop, start_to_close_timeout=timedelta(seconds=10))
        else:
            await workflow.execute_activity(noop, start_to_close_timeout=timedelta(seconds=10))


_client = None


@activity.defn
async def fetch(url: str) -> int:
    """The raw floor's tool call: one HTTP GET on a shared client (keep-alive, as Mint's worker has)."""
    global _client
    import httpx

    _client = _client or httpx.AsyncClient()
    return (await _client.get(url)).status_code


@workflow.defn
class SlidingWindowWorkflow:
    """The raw-Temporal way to fan out: every item an activity, at most `parallelism` in flight."""

    @workflow.run
    async def run(self, url: str, items: int, parallelism: int) -> int:
        import asyncio

        window = asyncio.Semaphore(parallelism)

        async def one() -> int:
            async with window:
                return await workflow.execute_activity(
                    fetch, url, start_to_close_timeout=timedelta(seconds=30)
                )

        return len(await asyncio.gather(*[one() for _ in range(items)]))
