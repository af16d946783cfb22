"""What the interpreter offers the modules it delegates steps to (fan_out.py, call_steps.py): a Protocol, so
they depend on this small surface and not on interpreter.py, which imports them (no import cycle)."""

from __future__ import annotations

from typing import Any, Literal, Protocol

from contracts.executions import ExecutionParams
from contracts.transitions import Position
from workflows import language as lang
from workflows.frames import Frame
from workflows.transition_log import TransitionLog
from workflows.values import ValueEvaluator
from workflows.visibility import Visibility
from workflows.waits import Waits


class HandedGuardrails(Protocol):
    """What a step asks of the execution's guardrails (workflows/execution_guardrails.py, which takes a
    StepRunner itself, so it is named by its shape here)."""

    async def run_handed(
        self,
        stage: Literal["input", "output"],
        agent: dict[str, Any],
        messages: list[dict[str, Any]],
        names: dict[str, Any],
        position: Position,
    ) -> None: ...


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

    @property
    def guards(self) -> HandedGuardrails: ...  # the task's and the agents' guardrails (read-only here)

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
