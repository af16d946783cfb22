"""A fan-out's batch of calls in the worker (activities/call_batches.py), run directly: its window, the step's
retries applied to each call, the stop after a failure, recorded answers skipped, and the developer's cap."""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio.exceptions import ApplicationError

from activities.call_batches import MAX_BATCH_ANSWER_BYTES, AnswerRecorder, run_batch
from activities.tenant_limits import BATCH_LIMITER, DeveloperLimiter
from contracts.calls import BatchedCall, BatchRetry, CallAnswer, CallBatch, RecordedAnswer
from contracts.temporal import CALL_API

NO_RETRY = BatchRetry(maximum_attempts=1, initial_interval=0.0, backoff=2.0, maximum_interval=0.0)
RETRY = BatchRetry(maximum_attempts=3, initial_interval=0.001, backoff=2.0, maximum_interval=0.01)


def batch(n: int, width: int, retry: BatchRetry = NO_RETRY, timeout: float = 5.0) -> CallBatch:
    # An api_call carries its own deadline; its attempt (`timeout`) has a few seconds more (workflows/calls.py).
    calls = [
        BatchedCall(f"call-{i}", {"url": f"https://example.com/{i}", "timeout": 1.0}, timeout)
        for i in range(n)
    ]
    return CallBatch(CALL_API, calls, width, retry, "execution", "developer")


class Calls:
    """A call activity that answers each request after `delay`, counting calls and the most at once."""

    def __init__(self, delay: float = 0.0, fail: dict[str, list[Exception]] | None = None):
        self.delay, self.fail = delay, fail or {}
        self.made: list[str] = []
        self.running = self.most = 0

    async def __call__(self, request: dict[str, Any]) -> CallAnswer:
        self.made.append(request["url"])
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            await asyncio.sleep(self.delay)
            failures = self.fail.get(request["url"])
            if failures:
                raise failures.pop(0)
            return CallAnswer(response={"url": request["url"]}, attempt=99)
        finally:
            self.running -= 1


class Records:
    def __init__(self) -> None:
        self.writes: list[list[str]] = []

    async def __call__(self, answers: list[RecordedAnswer]) -> None:
        await asyncio.sleep(0.001)
        self.writes.append([a.call_id for a in answers])

    @property
    def ids(self) -> list[str]:
        return [i for write in self.writes for i in write]


async def test_calls_run_width_at_a_time_in_order_and_every_answer_is_recorded():
    calls, records = Calls(delay=0.005), Records()
    outcomes = await run_batch(batch(30, 4), calls, {}, records)
    assert [o.answer.response["url"] for o in outcomes] == [f"https://example.com/{i}" for i in range(30)]
    assert calls.most == 4
    assert calls.made[:4] == [f"https://example.com/{i}" for i in range(4)]  # started in the batch's order
    assert sorted(records.ids) == sorted(f"call-{i}" for i in range(30))
    assert len(records.writes) < 30  # answers that arrive during a write go in the next one


async def test_a_recorded_answer_is_not_asked_again():
    calls = Calls()
    recorded = {"call-1": {"response": {"url": "from before"}, "attempt": 2}}
    outcomes = await run_batch(batch(3, 2), calls, recorded, Records())
    assert calls.made == ["https://example.com/0", "https://example.com/2"]
    assert outcomes[1].answer == CallAnswer(response={"url": "from before"}, attempt=2)


async def test_the_steps_retries_apply_to_each_call_and_the_answer_names_its_attempt():
    down = ApplicationError("https://example.com/1 answered 503", type="HttpUnavailable")
    calls = Calls(fail={"https://example.com/1": [down, down]})
    outcomes = await run_batch(batch(3, 3, RETRY), calls, {}, Records())
    assert [o.answer.attempt for o in outcomes] == [1, 3, 1]
    assert calls.made.count("https://example.com/1") == 3


async def test_a_permanent_error_is_not_retried_and_no_call_starts_after_a_failure():
    refused = ApplicationError("refused", type="EgressRefused", non_retryable=True)
    calls = Calls(fail={"https://example.com/1": [refused]})
    outcomes = await run_batch(batch(5, 1, RETRY), calls, {}, Records())
    assert calls.made == ["https://example.com/0", "https://example.com/1"]
    assert outcomes[1].failure is not None and outcomes[1].failure.type == "EgressRefused"
    assert outcomes[1].failure.non_retryable and not outcomes[1].failure.timed_out
    assert all(o.answer is None and o.failure is None for o in outcomes[2:])  # never made


async def test_an_error_type_the_step_lists_as_non_retryable_is_not_retried():
    down = ApplicationError("answered 503", type="HttpUnavailable")
    calls = Calls(fail={"https://example.com/0": [down]})
    retry = BatchRetry(3, 0.001, 2.0, 0.01, non_retryable=["HttpUnavailable"])
    (outcome,) = await run_batch(batch(1, 1, retry), calls, {}, Records())
    assert outcome.failure is not None and calls.made == ["https://example.com/0"]


async def test_an_attempt_past_its_timeout_fails_as_a_start_to_close_timeout():
    calls = Calls(delay=1.0)
    (outcome,) = await run_batch(batch(1, 1, timeout=0.05), calls, {}, Records())
    assert outcome.failure is not None and outcome.failure.timed_out
    assert outcome.failure.type == "TemporalTimeout:StartToClose"


async def test_each_call_takes_a_place_under_the_developers_cap():
    calls = Calls(delay=0.005)
    token = BATCH_LIMITER.set(DeveloperLimiter(per_developer=2))
    try:
        await run_batch(batch(10, 5), calls, {}, Records())
    finally:
        BATCH_LIMITER.reset(token)
    assert calls.most == 2


async def test_a_batch_whose_answers_grow_large_starts_no_new_call():
    class Big(Calls):
        async def __call__(self, request: dict[str, Any]) -> CallAnswer:
            await super().__call__(request)
            return CallAnswer(response={"content": "x" * (MAX_BATCH_ANSWER_BYTES // 3)}, attempt=1)

    calls = Big()
    outcomes = await run_batch(batch(6, 1), calls, {}, Records())
    assert [o.answer is not None for o in outcomes] == [True, True, False, False, False, False]
    assert all(o.failure is None for o in outcomes)  # not made: the workflow puts them back in line


async def test_a_failed_write_fails_the_batch_when_it_closes():
    async def broken(answers: list[RecordedAnswer]) -> None:
        raise ConnectionError("postgres went away")

    recorder = AnswerRecorder(broken)
    recorder.add(RecordedAnswer("a", 1))
    await asyncio.sleep(0)
    recorder.add(RecordedAnswer("b", 2))
    try:
        await recorder.close()
    except ConnectionError:
        pass
    else:
        raise AssertionError("the failed write was not raised")
