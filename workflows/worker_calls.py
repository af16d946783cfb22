"""Call steps run in the workflow's own worker (a local activity; activities/worker_calls.py runs them).

Each call carries the transitions pending before it and the answers of the calls before it, and the worker
records both, and looks up the call's own answer, in one transaction before calling: one round trip a step,
and a call that answered before its worker was lost is not made again. Which calls run here is calls.py's
rule (runs_in_worker).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import FailureError

from contracts.calls import (
    BatchedCall,
    BatchOutcome,
    BatchRetry,
    CallAnswer,
    CallBatch,
    ModelAnswer,
    RecordedAnswer,
    WorkerCall,
)
from contracts.step_runs import StepRun, StepRunOutcome
from contracts.temporal import BATCHED_CALLS, CALL_BATCH_IN_WORKER, CALL_IN_WORKER, RUN_STEPS_IN_WORKER
from contracts.transitions import TransitionBatch
from workflows.call_batches import batcher_for_this_item
from workflows.calls import CallRequest
from workflows.failures import as_activity_error
from workflows.transition_log import TransitionLog, batch_summary

# A batch itself (not its calls, which it retries by their step's policy) runs again after a lost worker, a
# failed write of its answers or its time bound: it then makes only the calls that have no answer recorded.
BATCH_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=10))
BATCH_ATTEMPTS_UNBOUNDED = 10
BATCH_SLACK_SECONDS = 10.0


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
        and the call in the Temporal UI's timeline. An item's call in a batched fan-out joins its batch."""
        batcher = batcher_for_this_item()
        if batcher is not None and name in BATCHED_CALLS:
            return await batcher.call(self, name, request, timeout, retry, summary)
        with self._carried() as (batch, answers):
            call = WorkerCall(
                name,
                request,
                self.log.execution_id,
                self.log.developer_id,
                str(workflow.uuid4()),
                batch,
                answers,
            )
            answer: CallAnswer | ModelAnswer = await _in_worker(
                name, CALL_IN_WORKER, call, result_type, timeout, retry, _with_records(summary, batch)
            )
        self.unrecorded.append(RecordedAnswer(call.call_id, answer))
        return answer

    async def batch(
        self, name: str, calls: list[BatchedCall], width: int, retry: RetryPolicy, summary: str
    ) -> list[BatchOutcome]:
        """Make `calls` (of activity `name`) in the worker, `width` at a time, each with `retry`
        (workflows/call_batches.py); each answer is recorded as it comes (so none joins `unrecorded`)."""
        log = self.log
        with self._carried() as (batch, answers):
            retries = retry_data(retry)
            request = CallBatch(
                name, calls, width, retries, log.execution_id, log.developer_id, batch, answers
            )
            bound = _batch_timeout(calls, width, retries)
            outcomes: list[BatchOutcome] = await _in_worker(
                name,
                CALL_BATCH_IN_WORKER,
                request,
                list[BatchOutcome],
                bound,
                BATCH_RETRY,
                _with_records(summary, batch),
            )
        return outcomes

    async def run_steps(self, run: StepRun, timeout: timedelta, summary: str) -> StepRunOutcome:
        """Run a run of steps in the worker (workflows/step_runs.py), carrying what is pending."""
        with self._carried() as (batch, answers):
            carrying = replace(run, transitions=batch, answers=answers)
            outcome: StepRunOutcome = await _in_worker(
                RUN_STEPS_IN_WORKER,
                RUN_STEPS_IN_WORKER,
                carrying,
                StepRunOutcome,
                timeout,
                BATCH_RETRY,
                _with_records(summary, batch),
            )
        return outcome

    @contextlib.contextmanager
    def _carried(self) -> Iterator[tuple[TransitionBatch | None, list[RecordedAnswer]]]:
        """The pending transitions (if the log can hand them over) and unrecorded answers a call carries; if
        the call fails, they go back, to be carried by the next."""
        log = self.log
        batch, answers = log.take_for_call(), self.unrecorded
        self.unrecorded = []
        try:
            yield batch, answers
        except BaseException:
            self.unrecorded = answers + self.unrecorded
            if batch is not None:
                log.call_ended(batch, written=False)
            raise
        if batch is not None:
            log.call_ended(batch, written=True)


async def _in_worker(
    failing: str,
    name: str,
    argument: object,
    result_type: Any,
    timeout: timedelta,
    retry: RetryPolicy,
    summary: str,
) -> Any:
    """Local activity `name`; its failure as activity `failing`'s would read (as_activity_error)."""
    try:
        return await workflow.execute_local_activity(
            name,
            argument,
            result_type=result_type,
            start_to_close_timeout=timeout,
            retry_policy=retry,
            summary=summary,
        )
    except FailureError as exc:
        error = as_activity_error(failing, exc)
        raise error from error.cause


def _with_records(summary: str, batch: TransitionBatch | None) -> str:
    return summary if batch is None else f"{summary} · records {batch_summary(batch.transitions)}"


def retry_data(retry: RetryPolicy) -> BatchRetry:
    """A step's retry policy as data, for a batch or run of calls to apply itself."""
    return BatchRetry(
        maximum_attempts=retry.maximum_attempts,
        initial_interval=retry.initial_interval.total_seconds(),
        backoff=retry.backoff_coefficient,
        maximum_interval=(retry.maximum_interval or retry.initial_interval * 100).total_seconds(),
        non_retryable=list(retry.non_retryable_error_types or ()),
    )


def _batch_timeout(calls: list[BatchedCall], width: int, retry: BatchRetry) -> timedelta:
    """A bound on a batch's run: its rounds of calls, each as long as its longest call's every attempt and
    the waits between them (a call retried without limit counts BATCH_ATTEMPTS_UNBOUNDED attempts: past the
    bound, the batch runs again, skipping the calls that answered)."""
    attempts = retry.maximum_attempts or BATCH_ATTEMPTS_UNBOUNDED
    wait = retry.maximum_interval
    longest = max(call.timeout for call in calls)
    rounds = -(-len(calls) // width)
    return timedelta(seconds=rounds * attempts * (longest + wait) + BATCH_SLACK_SECONDS)
