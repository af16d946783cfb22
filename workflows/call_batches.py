"""A fan-out of calls in batches: map_reduce over items whose body is one api_call step.

Each item's call as its own local activity costs the SDK's round trip and a workflow activation per item, and
a large fan-out of them child workflows. Instead, every item runs its body as usual up to its call, which
joins a batch (CallBatcher.call); once every item has joined, or ended without a call, the batcher runs the
calls in lanes: each lane takes the next calls in order of item, up to ROUNDS times its width (at least
LANE_WIDTH), and makes them in one local activity, `width` at a time (activities/call_batches.py), and each
item goes on with its answer when its batch ends. The lanes' widths add up to the step's parallelism, so at
most that many calls are in flight. Each answer is recorded as it comes: a batch run again (its workflow task
lost with the worker) makes only the calls that have none, and each call keeps its idempotency key.

A call that fails its last attempt fails its item as a call activity's failure would (the same ActivityError),
which fails the fan-out; its batch starts no new call after it, and no lane starts another batch. A batch whose
answers grow large stops early too (activities/call_batches.py), and its calls not made go back in line.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, FailureError, TimeoutType
from temporalio.exceptions import TimeoutError as ActivityTimeout

from contracts.calls import BatchedCall, BatchOutcome, CallAnswer, CallFailure
from workflows.failures import as_activity_error


class BatchMaker(Protocol):
    """What makes a batch of calls in the worker (workflows/worker_calls.py WorkerCalls, which joins items'
    calls to their batcher: a protocol here, so the two modules do not import each other)."""

    async def batch(
        self, name: str, calls: list[BatchedCall], width: int, retry: RetryPolicy, summary: str
    ) -> list[BatchOutcome]: ...


# Executions that started before fan-outs ran their calls in batches keep one local activity per call.
BATCH_PATCH = "fan-out-calls-run-in-batches"
# Calls one lane makes at once, at least: a fan-out's parallelism is split into lanes about this wide.
LANE_WIDTH = 10
# A lane's batch holds this many calls per place: fewer batches (each a local activity and an activation),
# while each item still goes on soon after its call (its batch ends within about this many calls' time).
ROUNDS = 5
# Items one history batches (more run in child workflows, each batching its own: workflows/fan_out.py).
MAX_BATCHED_ITEMS = 5_000


@dataclass
class _Joined:
    index: int
    call: BatchedCall
    answer: asyncio.Future[CallAnswer]


@dataclass
class _Ticket:
    """One item's place in a batcher: it joins with its first call, or leaves when it ends without one."""

    batcher: CallBatcher
    index: int
    joined: bool = False


_TICKET: ContextVar[_Ticket | None] = ContextVar("call_batch_ticket", default=None)


def batcher_for_this_item() -> CallBatcher | None:
    """The batcher the running item's call joins: its first call only, and only in a batched fan-out."""
    ticket = _TICKET.get()
    return ticket.batcher if ticket is not None and not ticket.joined else None


class CallBatcher:
    """Collects the calls of `items` items (numbered from `first`) and runs them in lanes `parallelism`
    places wide in all."""

    def __init__(self, items: int, parallelism: int, first: int = 0):
        self.expected, self.arrived, self.first = items, 0, first
        self.parallelism = parallelism
        self.joined: list[_Joined] = []
        self.waiting: deque[_Joined] = deque()  # joined calls not yet made, in order of item
        self.all_in = asyncio.Event()
        self.failed = False
        # Who makes the calls, their activity, the step's retries and summary: the first call's (one step).
        self.how: tuple[BatchMaker, str, RetryPolicy, str] | None = None
        if items == 0:
            self.all_in.set()

    @contextlib.contextmanager
    def item(self, index: int) -> Iterator[None]:
        """Run item `index` (in its own task) as a member of this batcher."""
        ticket = _Ticket(self, index)
        token = _TICKET.set(ticket)
        try:
            yield
        finally:
            _TICKET.reset(token)
            if not ticket.joined:
                self._arrive()

    async def call(
        self,
        in_worker: BatchMaker,
        name: str,
        request: Any,
        timeout: timedelta,
        retry: RetryPolicy,
        summary: str,
    ) -> CallAnswer:
        """The running item's call, made in a batch; the step's retry policy and summary are the same for
        every item's (one step), the attempt's timeout may differ (an api_call's own `timeout`)."""
        ticket = _TICKET.get()
        assert ticket is not None and ticket.batcher is self and not ticket.joined
        ticket.joined = True
        self.how = self.how or (in_worker, name, retry, summary)
        answer: asyncio.Future[CallAnswer] = asyncio.get_running_loop().create_future()
        call = BatchedCall(str(workflow.uuid4()), request, timeout.total_seconds())
        self.joined.append(_Joined(ticket.index, call, answer))
        self._arrive()
        return await answer

    def _arrive(self) -> None:
        self.arrived += 1
        if self.arrived == self.expected:
            self.all_in.set()

    async def run(self) -> None:
        """Once every item has joined or left, make the calls in lanes and hand each item its answer."""
        await self.all_in.wait()
        if not self.joined or self.how is None:
            return
        waiting = self.waiting = deque(sorted(self.joined, key=lambda joined: joined.index))
        lanes = max(1, min(self.parallelism // LANE_WIDTH, -(-len(waiting) // LANE_WIDTH)))
        widths = [
            self.parallelism // lanes + (1 if i < self.parallelism % lanes else 0) for i in range(lanes)
        ]
        size = -(-len(waiting) // lanes)  # spread a small fan-out over every lane

        async def lane(width: int) -> None:
            while waiting and not self.failed:
                batch = [
                    waiting.popleft() for _ in range(min(max(width, LANE_WIDTH) * ROUNDS, size, len(waiting)))
                ]
                await self._run_batch(batch, width)

        await asyncio.gather(*(lane(width) for width in widths))

    async def _run_batch(self, batch: list[_Joined], width: int) -> None:
        assert self.how is not None
        in_worker, name, retry, summary = self.how
        first, last = self.first + batch[0].index, self.first + batch[-1].index
        outcomes = await in_worker.batch(
            name,
            [j.call for j in batch],
            width,
            retry,
            f"{summary} · items {first}-{last}, {width} at a time",
        )
        unmade = [
            j for j, outcome in zip(batch, outcomes, strict=True) if not self._hand_over(name, j, outcome)
        ]
        # Not made: the batch's answers filled it (they go first in line again), or another call failed (whose
        # failure cancels their items with the fan-out).
        self.waiting.extendleft(reversed(unmade))

    def _hand_over(self, name: str, joined: _Joined, outcome: BatchOutcome) -> bool:
        """Give the item its answer or its failure; False when the call was not made."""
        if outcome.answer is not None:
            joined.answer.set_result(outcome.answer)
        elif outcome.failure is not None:
            self.failed = True
            joined.answer.set_exception(failure_error(name, outcome.failure))
        return outcome.answer is not None or outcome.failure is not None


def failure_error(name: str, failure: CallFailure) -> ActivityError:
    """A batched call's failure as the call's own local activity would have failed."""
    cause: FailureError
    if failure.timed_out:
        cause = ActivityTimeout(failure.message, type=TimeoutType.START_TO_CLOSE, last_heartbeat_details=[])
    else:
        cause = ApplicationError(failure.message, type=failure.type, non_retryable=failure.non_retryable)
    return as_activity_error(name, cause)
