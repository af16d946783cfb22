"""What the interpreter offers the modules it delegates steps to (fan_out.py, call_steps.py): a Protocol, so
they depend on this small surface and not on interpreter.py, which imports them (no import cycle)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from contracts.executions import ExecutionParams
from workflows import language as lang
from workflows.frames import Frame
from workflows.transition_log import TransitionLog
from workflows.values import ValueEvaluator
from workflows.visibility import Visibility
from workflows.waits import Waits

if TYPE_CHECKING:  # it takes a StepRunner itself
    from workflows.execution_guardrails import ExecutionGuardrails


class StepRunner(Protocol):
    params: ExecutionParams
    task: lang.TaskSpec
    values: ValueEvaluator
    log: TransitionLog
    tools: dict[str, dict[str, Any]]
    state: dict[str, Any]
    labels: dict[str, dict[str, Any]]
    waits: Waits
    view: Visibility  # what the Temporal UI shows of the run
    legacy: bool  # the execution runs as before issue 13 (see Interpreter._started_legacy)
    guards: ExecutionGuardrails  # the task's and the agents' guardrails

    async def run_sequence(
        self,
        steps: list[Any],
        value: Any,
        frame: Frame,
        path: str,
        metadata: dict[str, Any] | None = None,
        tail: bool = False,
    ) -> Any:
        """Run nested steps; each step's output is the next one's `_`."""

    def start_budget(self) -> None:
        """A fresh allowance of work for a step."""
