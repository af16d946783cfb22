"""Call steps run by the workflow's own worker: one round trip a call, and no call made twice.

A call step that runs as a regular activity costs two activities (the transition write, then the call), each
queued through Temporal and each ending in a workflow task. Run as a local activity (workflows/call_steps.py
decides which calls run so), a call goes straight from the workflow to this worker's activity slots and back.
It carries the transitions the workflow had pending and the answers of its earlier calls, which are written,
with a look-up of this call's own answer, in one transaction before the call.

Why the look-up: Temporal records a local activity's result only when the workflow task it ran in completes,
and a chain of fast calls runs in one workflow task; a worker lost mid-chain makes the next worker run the
whole chain again. Each call's recorded answer (migration 0014) stops all but the call in flight from being
made again, and that one keeps its idempotency key, as every retry does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.transitions import TransitionWriter
from contracts.calls import WorkerCall
from contracts.temporal import ACTIVITIES, CALL_IN_WORKER, WORKER_CALLS
from infra.temporal.payload_json import from_json

Call = Callable[[Any], Awaitable[Any]]


class WorkerCalls:
    """Runs the named call activity in this worker, after recording what the call carries and looking up
    its own answer."""

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
        recorded = await self.writer.before_call(call)
        if recorded is not None:
            return recorded  # this call answered in a run of the workflow task that was lost with its worker
        return await run(from_json(ACTIVITIES[call.activity][0], call.request))
