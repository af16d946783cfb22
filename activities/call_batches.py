"""A batch of a fan-out's calls, run in the workflow's own worker (call_batch_in_worker; the workflow's side
is workflows/call_batches.py).

One local activity makes a batch's calls, `width` at a time, each attempt with its own timeout and the step's
retries applied here (Temporal's would retry the whole batch), and each call admitted by the developer's cap
as a single call is (activities/tenant_limits.py). Each answer is recorded under its call's id as it comes,
in group writes (one write in flight; the answers that arrive meanwhile go in the next), so a batch that runs
again calls only what has no answer yet, and every call keeps its idempotency key. After a call fails its last
attempt no new call starts: the failure fails the fan-out, as a failed item does. Nor does one once the
answers reach MAX_BATCH_ANSWER_BYTES: the batch's result carries them all (an api_call's answer may be
up to 64 MB), and the workflow puts the calls not made back in line for the next batch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from temporalio.exceptions import ApplicationError

from activities.tenant_limits import admitted, whose_call
from contracts.calls import (
    BatchedCall,
    BatchOutcome,
    BatchRetry,
    CallAnswer,
    CallBatch,
    CallFailure,
    RecordedAnswer,
)
from contracts.json import JsonValue
from contracts.temporal import ACTIVITIES
from infra.temporal.payload_json import from_json

# Answers a batch gathers before it starts no new call (the calls in flight still finish).
MAX_BATCH_ANSWER_BYTES = 4 * 1024 * 1024
# How Temporal names an attempt's timeout among a retry policy's non-retryable error types.
ATTEMPT_TIMEOUT = "TemporalTimeout:StartToClose"

Call = Callable[[Any], Awaitable[CallAnswer]]
Record = Callable[[list[RecordedAnswer]], Awaitable[None]]


async def run_batch(
    batch: CallBatch, call: Call, recorded: dict[str, JsonValue], record: Record
) -> list[BatchOutcome]:
    """Each of the batch's calls' outcome, in order: `recorded` answers (by call id) as they are, the rest
    made by `call`, `batch.width` at a time, and recorded by `record` as they answer."""
    outcomes: list[BatchOutcome | None] = [
        BatchOutcome(answer=from_json(CallAnswer, recorded[c.call_id])) if c.call_id in recorded else None
        for c in batch.calls
    ]
    recorder = AnswerRecorder(record)
    window = asyncio.Semaphore(batch.width)  # first come, first served: calls start in the batch's order
    failed, answered_bytes = False, 0

    async def one(i: int, planned: BatchedCall) -> None:
        nonlocal failed, answered_bytes
        async with window:
            if failed or answered_bytes >= MAX_BATCH_ANSWER_BYTES:
                return
            outcome = await attempt_call(batch.activity, batch.developer_id, batch.retry, planned, call)
            outcomes[i] = outcome
            if outcome.answer is not None:
                recorder.add(RecordedAnswer(planned.call_id, outcome.answer))
                answered_bytes += answer_bytes(outcome.answer)
            else:
                failed = True

    await asyncio.gather(*(one(i, c) for i, c in enumerate(batch.calls) if outcomes[i] is None))
    await recorder.close()
    return [outcome or BatchOutcome() for outcome in outcomes]


async def attempt_call(
    name: str, developer_id: str, retry: BatchRetry, planned: BatchedCall, call: Call
) -> BatchOutcome:
    """One call of activity `name`, for `developer_id`, attempted as `retry` says; its answer names the
    attempt that gave it."""
    request = from_json(ACTIVITIES[name][0], planned.request)
    whose = whose_call(name, request)
    own_deadline = whose[1] if whose is not None else None
    interval, attempt = retry.initial_interval, 1
    while True:
        timer = asyncio.timeout(planned.timeout)
        try:
            async with timer, admitted(developer_id, planned.timeout, own_deadline):
                answer = await call(request)
            return BatchOutcome(answer=replace(answer, attempt=attempt))
        except TimeoutError as exc:
            if not timer.expired():
                failure = _failure(exc)
            else:
                failure = CallFailure("activity StartToClose timeout", ATTEMPT_TIMEOUT, False, timed_out=True)
        except Exception as exc:
            failure = _failure(exc)
        if not _retried(failure, retry, attempt):
            return BatchOutcome(failure=failure)
        await asyncio.sleep(interval)
        interval, attempt = min(interval * retry.backoff, retry.maximum_interval), attempt + 1


def answer_bytes(answer: CallAnswer) -> int:
    """About how large an answer is: an HTTP response's body counts twice (as text, and parsed as JSON)."""
    response = answer.response
    content = response.get("content") if isinstance(response, dict) else None
    return 2 * len(content) if isinstance(content, str) else 0


def _failure(exc: Exception) -> CallFailure:
    if isinstance(exc, ApplicationError):
        return CallFailure(exc.message, exc.type, exc.non_retryable, timed_out=False)
    return CallFailure(str(exc), type(exc).__name__, False, timed_out=False)


def _retried(failure: CallFailure, retry: BatchRetry, attempt: int) -> bool:
    """Whether another attempt follows, as Temporal decides for an activity."""
    if failure.non_retryable or failure.type in retry.non_retryable:
        return False
    return retry.maximum_attempts == 0 or attempt < retry.maximum_attempts


class AnswerRecorder:
    """Records answers as they come: one write at a time, each taking all that arrived while the last ran.
    A failed write stops the recording; close() raises it (the batch then fails and runs again)."""

    def __init__(self, record: Record):
        self.record = record
        self.waiting: list[RecordedAnswer] = []
        self.writing: asyncio.Task[None] | None = None
        self.error: Exception | None = None

    def add(self, answer: RecordedAnswer) -> None:
        self.waiting.append(answer)
        if self.error is None and (self.writing is None or self.writing.done()):
            self.writing = asyncio.create_task(self._drain())

    async def _drain(self) -> None:
        try:
            while self.waiting:
                answers, self.waiting = self.waiting, []
                await self.record(answers)
        except Exception as exc:
            self.error = exc

    async def close(self) -> None:
        """Wait for every answer added to be recorded; raises what a write raised."""
        if self.writing is not None:
            await self.writing
        if self.error is None and self.waiting:
            await self._drain()
        if self.error is not None:
            raise self.error
