"""ScheduledRunWorkflow: what a Temporal Schedule starts at each firing. It starts the task's execution
through the API's own launch path (an activity: the execution is a row in Postgres and a workflow of its own),
then waits for that execution to end, so that the schedule's overlap policy (skip, buffer_one, cancel_other,
allow_all) is about executions, not about this short start. Cancelled (cancel_other), it cancels its
execution too."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, CancelledError

from contracts.liveness import HEARTBEAT_TIMEOUT
from contracts.schedules import (
    AWAIT_SCHEDULED_RUN,
    CANCEL_SCHEDULED_RUN,
    LAUNCH_SCHEDULED_RUN,
    SCHEDULED_RUN_WORKFLOW,
    Firing,
    Launched,
    ScheduledExecution,
    schedule_of_run,
)

# A start that keeps failing (Temporal or Postgres away, the developer at their limit of executions in
# flight) is given up after about ten minutes: the firing then shows as failed on the Temporal UI.
LAUNCH_RETRY = RetryPolicy(maximum_interval=timedelta(minutes=1), maximum_attempts=15)
# An execution may wait for input for weeks; the wait is a heartbeating activity, so a lost worker is noticed.
LONGEST_RUN = timedelta(days=365)


@workflow.defn(name=SCHEDULED_RUN_WORKFLOW)
class ScheduledRunWorkflow:
    @workflow.run
    async def run(self) -> str | None:
        """The id of the execution this firing started (None when its schedule is gone)."""
        key = workflow.info().workflow_id
        schedule_id = schedule_of_run(key)
        launched = await workflow.execute_activity(
            LAUNCH_SCHEDULED_RUN,
            Firing(schedule_id, key),
            result_type=Launched,
            start_to_close_timeout=timedelta(seconds=60),
            retry_policy=LAUNCH_RETRY,
            summary=f"start an execution for schedule {schedule_id}",
        )
        started: ScheduledExecution | None = launched.execution
        if started is None:
            return None
        execution_id: str = started.execution_id
        try:
            await workflow.execute_activity(
                AWAIT_SCHEDULED_RUN,
                started,
                start_to_close_timeout=LONGEST_RUN,
                heartbeat_timeout=HEARTBEAT_TIMEOUT,
                summary=f"execution {execution_id}",
            )
        except (asyncio.CancelledError, CancelledError, ActivityError) as exc:
            if not _cancelled(exc):
                raise
            # The schedule's cancel_other (or a cancel on the Temporal UI): the execution goes with it.
            await workflow.execute_activity(
                CANCEL_SCHEDULED_RUN,
                started,
                start_to_close_timeout=timedelta(seconds=60),
                summary=f"cancel execution {execution_id}",
            )
            raise
        return execution_id


def _cancelled(exc: BaseException) -> bool:
    return isinstance(exc, asyncio.CancelledError | CancelledError) or isinstance(
        exc.__cause__, CancelledError
    )
