"""Raw Temporal's side of bench/peers.py: the same workloads written as plain Temporal workflows (kept in a
module of their own for the workflow sandbox; the activities are bench/floor_workflows.py's)."""

from datetime import timedelta

from temporalio import activity, workflow

from bench.floor_workflows import fetch

TIMEOUT = timedelta(seconds=30)


@activity.defn
async def add_one(value: int) -> int:
    """A pure step run as a local activity: what a raw workflow would do to record each step in history."""
    return value + 1


@workflow.defn
class ComputeChainWorkflow:
    """`steps` pure steps computed inside the workflow (one workflow task; nothing recorded per step)."""

    @workflow.run
    async def run(self, steps: int) -> int:
        value = 0
        for _ in range(steps):
            value += 1
        return value


@workflow.defn
class LocalChainWorkflow:
    """`steps` pure steps, each a local activity (each one's result a marker in history)."""

    @workflow.run
    async def run(self, steps: int) -> int:
        value = 0
        for _ in range(steps):
            value = await workflow.execute_local_activity(add_one, value, start_to_close_timeout=TIMEOUT)
        return value


@workflow.defn
class FetchChainWorkflow:
    """`steps` HTTP GETs in turn, each an activity (or a local activity)."""

    @workflow.run
    async def run(self, url: str, steps: int, local: bool) -> int:
        status = 0
        for _ in range(steps):
            if local:
                status = await workflow.execute_local_activity(fetch, url, start_to_close_timeout=TIMEOUT)
            else:
                status = await workflow.execute_activity(fetch, url, start_to_close_timeout=TIMEOUT)
        return status


@workflow.defn
class ThreeStepWorkflow:
    """The throughput shape: compute in the workflow, one GET activity, compute in the workflow."""

    @workflow.run
    async def run(self, url: str) -> dict[str, int]:
        first = sum(range(10))
        status = await workflow.execute_activity(fetch, url, start_to_close_timeout=TIMEOUT)
        return {"first": first, "status": status, "last": first + status}
