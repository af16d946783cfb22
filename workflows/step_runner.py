"""What the interpreter offers the modules it delegates steps to (fan_out.py, call_steps.py): a Protocol, so
they depend on this small surface and not on interpreter.py, which imports them (no import cycle)."""

from __future__ import annotations

from typing import Any, Literal, Protocol

from contracts.executions import ExecutionParams, StepRecord
from contracts.json import JsonObject
from contracts.messages import Message
from contracts.transitions import Position
from workflows import language as lang
from workflows.agents import Agent
from workflows.frames import Frame
from workflows.patches import Patches
from workflows.tool_kinds import Tool
from workflows.transition_log import TransitionLog
from workflows.values import Names, ValueEvaluator
from workflows.visibility import Visibility
from workflows.waits import Waits


class HandedGuardrails(Protocol):
    """What a step asks of the execution's guardrails (workflows/execution_guardrails.py, which takes a
    StepRunner itself, so it is named by its shape here)."""

    async def run_handed(
        self,
        stage: Literal["input", "output"],
        agent: Agent,
        messages: list[Message],
        names: Names,
        position: Position,
    ) -> None: ...


class StepRunner(Protocol):
    params: ExecutionParams
    task: lang.TaskSpec
    values: ValueEvaluator
    log: TransitionLog
    agent: Agent  # the execution's
    tools: dict[str, Tool]  # the task's and its agent's, by name
    state: JsonObject
    labels: dict[str, StepRecord]
    waits: Waits
    view: Visibility  # what the Temporal UI shows of the run
    legacy: bool  # log, yield and reduce in their old form (see Interpreter._started_legacy)
    patched: Patches  # which changes of behaviour the run takes

    @property
    def guards(self) -> HandedGuardrails: ...  # the task's and the agents' guardrails (read-only here)

    async def run_sequence(
        self,
        steps: list[Any],
        value: Any,
        frame: Frame,
        path: str,
        metadata: JsonObject | None = None,
        tail: bool = False,
    ) -> Any:
        """Run nested steps; each step's output is the next one's `_`."""

    def start_budget(self) -> None:
        """A fresh allowance of work for a step."""
