"""TaskExecutionWorkflow: one Temporal workflow per execution, with workflow id = execution id; large
fan-outs run in MapChunkWorkflow children."""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from contracts.executions import ChunkOutcome, ExecutionParams, MapChunk, ResumeInput
from contracts.temporal import MAP_CHUNK_WORKFLOW, RESUME_SIGNAL, TASK_EXECUTION_WORKFLOW
from workflows.call_batches import BATCH_PATCH
from workflows.calls import CALLS_IN_WORKER_PATCH, INTEGRATIONS_PATCH
from workflows.failures import StepFailed
from workflows.fan_out import SERIAL_WINDOW_PATCH, WRITE_ENDED_BRANCHES_PATCH
from workflows.inbox import Inbox
from workflows.interpreter import JULEP_LOOPS_PATCH, Interpreter
from workflows.references import BOUNDED_PATCH, REFERENCES_PATCH
from workflows.step_runs import RUNS_PATCH
from workflows.values import RESULTS_PATCH
from workflows.visibility import MINT_STATUS_PATCH
from workflows.waits import DEFAULT_EVALUATED_PATCH, EARLY_RESUME_PATCH

# Every change of behaviour a replay must respect: an execution started now takes them all from its start
# (ExecutionParams.patches; see workflows/patches.py).
CURRENT_PATCHES = (
    JULEP_LOOPS_PATCH,
    RESULTS_PATCH,
    MINT_STATUS_PATCH,
    CALLS_IN_WORKER_PATCH,
    INTEGRATIONS_PATCH,
    REFERENCES_PATCH,
    BOUNDED_PATCH,
    SERIAL_WINDOW_PATCH,
    WRITE_ENDED_BRANCHES_PATCH,
    EARLY_RESUME_PATCH,
    DEFAULT_EVALUATED_PATCH,
    BATCH_PATCH,
    RUNS_PATCH,
)


@workflow.defn(name=TASK_EXECUTION_WORKFLOW)
class TaskExecutionWorkflow:
    def __init__(self) -> None:
        self._inbox = Inbox()

    @workflow.signal(name=RESUME_SIGNAL)
    def resume(self, payload: ResumeInput) -> None:
        """PUT /executions/{id} with status `running`: `input` becomes the output of wait `wait_seq`."""
        self._inbox.deliver(payload.wait_seq, payload.input, payload.exact)

    @workflow.run
    async def run(self, params: ExecutionParams) -> Any:
        try:
            return await Interpreter(params, self._inbox).run()
        except StepFailed as exc:
            # The error transition is already written; failing the workflow shows it in the Temporal UI too.
            raise ApplicationError(str(exc), type="StepFailed", non_retryable=True) from None


@workflow.defn(name=MAP_CHUNK_WORKFLOW)
class MapChunkWorkflow:
    """Part of a large map or foreach, as a child of the execution's workflow (see FanOut._in_children)."""

    @workflow.run
    async def run(self, chunk: MapChunk) -> ChunkOutcome:
        try:
            interpreter = Interpreter(chunk.params, Inbox(), chunk=True)
            return await interpreter.fan_out.run_chunk(chunk)
        except StepFailed as exc:
            raise ApplicationError(str(exc), type="StepFailed", non_retryable=True) from None
