"""Call steps run by the workflow's own worker: the call and the transitions before it in one round trip.

A call step that runs as a regular activity costs two activities (the transition write, then the call), each
queued through Temporal and each ending in a workflow task. Run as a local activity (workflows/call_steps.py
decides which calls run so), a call goes straight from the workflow to this worker's activity slots and back,
and carries the transitions the workflow had pending, which are written here while the call runs. Both stay
as safe as before: the call keeps its idempotency key on every attempt, and the write is idempotent (rows are
unique on their sequence number), so the retry of a lost attempt repeats neither.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.transitions import TransitionWriter
from contracts.calls import WorkerCall
from contracts.temporal import ACTIVITIES, CALL_IN_WORKER, WORKER_CALLS
from mint.temporal.payload_json import from_json

Call = Callable[[Any], Awaitable[Any]]


class WorkerCalls:
    """Runs the named call activity in this worker, writing the transitions it carries alongside."""

    def __init__(self, writer: TransitionWriter, calls: dict[str, Call]):
        unknown = set(calls) - WORKER_CALLS
        if unknown:
            raise ValueError(f"not calls a step runs in the worker: {sorted(unknown)}")
        self.writer = writer
        self.calls = calls

    @activity.defn(name=CALL_IN_WORKER)
    async def call_in_worker(self, call: WorkerCall) -> Any:
        run = self.calls.get(call.activity)
        if run is None:
            raise ApplicationError(
                f"{call.activity!r} cannot run in the worker", type="BadCall", non_retryable=True
            )
        request = from_json(ACTIVITIES[call.activity][0], call.request)
        if call.transitions is None:
            return await run(request)
        write = asyncio.ensure_future(self.writer.write_transitions(call.transitions))
        try:
            answer = await run(request)
        finally:
            # The write finishes whatever became of the call: the workflow counts it as written only when
            # this activity succeeds, and writes it again (harmlessly) otherwise. A failed call's error wins.
            await asyncio.wait([write])
            refused = None if write.cancelled() else write.exception()
        if refused is not None:
            raise refused  # the write failed: this attempt fails with its error
        return answer
