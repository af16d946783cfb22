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
