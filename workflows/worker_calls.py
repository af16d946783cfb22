"""Call steps run in the workflow's own worker (a local activity; activities/worker_calls.py runs them).

Each call carries the transitions pending before it and the answers of the calls before it, and the worker
records both, and looks up the call's own answer, in one transaction before calling: one round trip a step,
and a call that answered before its worker was lost is not made again. Which calls run here is calls.py's
rule (runs_in_worker).
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, FailureError
from temporalio.exceptions import TimeoutError as ActivityTimeout

from contracts.calls import CallAnswer, ModelAnswer, RecordedAnswer, WorkerCall
from contracts.temporal import CALL_IN_WORKER
from workflows.calls import CallRequest
from workflows.transition_log import TransitionLog, batch_summary


class WorkerCalls:
    """One workflow's calls in its worker, and the answers not yet recorded."""

    def __init__(self, log: TransitionLog):
        self.log = log
        self.unrecorded: list[RecordedAnswer] = []  # recorded with the next call, or never needed again

    async def call(
        self,
        name: str,
        request: CallRequest,
        result_type: type,
        timeout: timedelta,
        retry: RetryPolicy,
        summary: str,
    ) -> CallAnswer | ModelAnswer:
        """Run activity `name` in the worker, with the step's timeout and retries; `summary` names the step
        and the call in the Temporal UI's timeline."""
        log = self.log
        batch, answers = log.take_for_call(), self.unrecorded
        self.unrecorded = []
        call = WorkerCall(
            name, request, log.execution_id, log.developer_id, str(workflow.uuid4()), batch, answers
        )
        try:
            answer: CallAnswer | ModelAnswer = await workflow.execute_local_activity(
                CALL_IN_WORKER,
                call,
                result_type=result_type,
                start_to_close_timeout=timeout,
                retry_policy=retry,
                summary=summary
                if batch is None
                else f"{summary} · records {batch_summary(batch.transitions)}",
            )
        except BaseException as exc:
            self.unrecorded = answers + self.unrecorded
            if batch is not None:
                log.call_ended(batch, written=False)
            if isinstance(exc, FailureError):
                error = as_activity_error(name, exc)
                raise error from error.cause
            raise
        if batch is not None:
            log.call_ended(batch, written=True)
        self.unrecorded.append(RecordedAnswer(call.call_id, answer))
        return answer


def as_activity_error(name: str, exc: FailureError) -> ActivityError:
    """A call in the worker's failure as a queued call's would read: an ActivityError of the named activity
    whose cause is what the call raised (a local activity fails with that error itself, or with an
    ActivityError of call_in_worker around it)."""
    cause = exc.cause if isinstance(exc, ActivityError) else exc
    if isinstance(cause, ActivityTimeout) and cause.type is not None:
        # As Temporal words a queued activity's: "activity StartToClose timeout".
        kind = "".join(word.capitalize() for word in cause.type.name.split("_"))
        cause = ActivityTimeout(f"activity {kind} timeout", type=cause.type, last_heartbeat_details=[])
    error = ActivityError(
        exc.message,
        scheduled_event_id=0,
        started_event_id=0,
        identity="",
        activity_type=name,
        activity_id="",
        retry_state=exc.retry_state if isinstance(exc, ActivityError) else None,
    )
    error.__cause__ = cause
    return error
