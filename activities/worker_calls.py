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

from activities.call_batches import run_batch
from activities.step_runs import StepRunner
from activities.transitions import TransitionWriter
from contracts.calls import BatchOutcome, CallBatch, RecordedAnswer, WorkerCall
from contracts.json import JsonValue
from contracts.step_runs import StepRun, StepRunOutcome
from contracts.temporal import (
    ACTIVITIES,
    BATCHED_CALLS,
    CALL_API,
    CALL_BATCH_IN_WORKER,
    CALL_IN_WORKER,
    RUN_STEPS_IN_WORKER,
    WORKER_CALLS,
)
from contracts.transitions import TransitionBatch, TransitionRow
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
        run = self._call(call.activity)
        recorded = await self.writer.before_call(call)
        if recorded is not None:
            return recorded  # this call answered in a run of the workflow task that was lost with its worker
        return await run(from_json(ACTIVITIES[call.activity][0], call.request))

    @activity.defn(name=CALL_BATCH_IN_WORKER)
    async def call_batch_in_worker(self, batch: CallBatch) -> list[BatchOutcome]:
        """The batch's calls' outcomes, in order (activities/call_batches.py)."""
        if batch.activity not in BATCHED_CALLS:
            raise ApplicationError(
                f"{batch.activity!r} cannot run in a batch", type="BadCall", non_retryable=True
            )
        run = self._call(batch.activity)
        recorded = await self.writer.before_batch(batch)

        async def record(answers: list[RecordedAnswer]) -> None:
            await self.writer.record_answers(batch.execution_id, batch.developer_id, answers)

        return await run_batch(batch, run, recorded, record)

    @activity.defn(name=RUN_STEPS_IN_WORKER)
    async def run_steps_in_worker(self, run: StepRun) -> StepRunOutcome:
        """A run of steps (activities/step_runs.py)."""
        writer, params = self.writer, run.params
        execution, developer = params.execution_id, params.developer_id

        async def look_up(call_ids: list[str]) -> dict[str, JsonValue]:
            return await writer.before_calls(execution, developer, run.transitions, run.answers, call_ids)

        async def record(rows: list[TransitionRow], answers: list[RecordedAnswer]) -> None:
            await writer.record_steps(TransitionBatch(execution, developer, rows, "running"), answers)

        return await StepRunner(run, self._call(CALL_API), look_up, record).go()

    def _call(self, name: str) -> Call:
        run = self.calls.get(name)
        if run is None:
            raise ApplicationError(f"{name!r} cannot run in the worker", type="BadCall", non_retryable=True)
        return run
