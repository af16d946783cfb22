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
from temporalio.exceptions import ActivityError, CancelledError, TimeoutType
from temporalio.exceptions import TimeoutError as ActivityTimeout

from contracts.liveness import HEARTBEAT_TIMEOUT
from contracts.schedules import (
    AWAIT_SCHEDULED_RUN,
    CANCEL_SCHEDULED_RUN,
    LAUNCH_SCHEDULED_RUN,
    SCHEDULED_RUN_ENDED,
    SCHEDULED_RUN_WORKFLOW,
    Firing,
    Launched,
    ScheduledExecution,
    schedule_of_run,
)

# A start that keeps failing (Temporal or Postgres away, the developer at their limit of executions in
# flight) is given up after about ten minutes: the firing then shows as failed on the Temporal UI.
LAUNCH_RETRY = RetryPolicy(maximum_interval=timedelta(minutes=1), maximum_attempts=15)
# Most runs end within minutes: they are waited for by a heartbeating activity, which learns of the end at
# once but holds a worker's activity slot. A run still going after this is polled instead, at growing
# intervals, holding nothing between polls (an execution may wait for input for weeks).
IN_WORKER_WAIT = timedelta(minutes=10)
FIRST_POLL = timedelta(seconds=30)
LONGEST_POLL = timedelta(minutes=30)
SHORT_CALL = timedelta(seconds=60)


@workflow.defn(name=SCHEDULED_RUN_WORKFLOW)
class ScheduledRunWorkflow:
    @workflow.run
    async def run(self, waiting: ScheduledExecution | None = None) -> str | None:
        """The id of the execution this firing started (None when its schedule is gone). `waiting`: the
        execution a run that continued as new goes on waiting for."""
        started = waiting or await _launch()
        if started is None:
            return None
        try:
            if waiting is None and await _awaited_in_worker(started):
                return started.execution_id
            await _poll(started, FIRST_POLL if waiting is None else LONGEST_POLL)
        except (asyncio.CancelledError, CancelledError, ActivityError) as exc:
            if not _cancelled(exc):
                raise
            # The schedule's cancel_other (or a cancel on the Temporal UI): the execution goes with it.
            await workflow.execute_activity(
                CANCEL_SCHEDULED_RUN,
                started,
                start_to_close_timeout=SHORT_CALL,
                summary=f"cancel execution {started.execution_id}",
            )
            raise
        return started.execution_id


async def _launch() -> ScheduledExecution | None:
    """The execution this firing starts (its workflow id, the firing's key, keeps a retried start to one)."""
    key = workflow.info().workflow_id
    schedule_id = schedule_of_run(key)
    launched = await workflow.execute_activity(
        LAUNCH_SCHEDULED_RUN,
        Firing(schedule_id, key),
        result_type=Launched,
        start_to_close_timeout=SHORT_CALL,
        retry_policy=LAUNCH_RETRY,
        summary=f"start an execution for schedule {schedule_id}",
    )
    found: ScheduledExecution | None = launched.execution
    return found


async def _awaited_in_worker(started: ScheduledExecution) -> bool:
    """Whether the execution ended within IN_WORKER_WAIT (False: it is still going)."""
    try:
        await workflow.execute_activity(
            AWAIT_SCHEDULED_RUN,
            started,
            schedule_to_close_timeout=IN_WORKER_WAIT,
            heartbeat_timeout=HEARTBEAT_TIMEOUT,
            summary=f"execution {started.execution_id}",
        )
    except ActivityError as exc:
        cause = exc.__cause__
        if isinstance(cause, ActivityTimeout) and cause.type == TimeoutType.SCHEDULE_TO_CLOSE:
            return False
        raise
    return True


async def _poll(started: ScheduledExecution, delay: timedelta) -> None:
    """Returns once the execution has ended, asking at growing intervals; continues as new before the
    history grows long."""
    while not await workflow.execute_activity(
        SCHEDULED_RUN_ENDED,
        started,
        result_type=bool,
        start_to_close_timeout=SHORT_CALL,
        summary=f"has execution {started.execution_id} ended?",
    ):
        if workflow.info().is_continue_as_new_suggested():
            workflow.continue_as_new(started)
        await workflow.sleep(delay)
        delay = min(delay * 2, LONGEST_POLL)


def _cancelled(exc: BaseException) -> bool:
    return isinstance(exc, asyncio.CancelledError | CancelledError) or isinstance(
        exc.__cause__, CancelledError
    )
