"""TaskExecutionWorkflow: one Temporal workflow per execution, with workflow id = execution id."""

from __future__ import annotations

from collections import deque
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from workflows.interpreter import ExecutionParams, Interpreter, StepFailed


@workflow.defn(name="TaskExecutionWorkflow")
class TaskExecutionWorkflow:
    def __init__(self) -> None:
        self._resume_inputs: deque[Any] = deque()

    @workflow.signal
    def resume(self, payload: Any) -> None:
        """PUT /executions/{id} with status `running`: the input becomes the waiting step's output."""
        self._resume_inputs.append(payload)

    @workflow.run
    async def run(self, params: ExecutionParams) -> Any:
        try:
            return await Interpreter(params, self._resume_inputs).run()
        except StepFailed as exc:
            # The error transition is already written; failing the workflow shows it in the Temporal UI too.
            raise ApplicationError(str(exc), type="StepFailed", non_retryable=True) from None
