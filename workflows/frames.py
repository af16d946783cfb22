"""What an execution runs with: its fixed parameters, a frame per run of a named workflow, the view of
`steps` that expressions read, and the point a continued-as-new run resumes from.

Plain data, shared by the interpreter and the modules it delegates to (fan_out, call_steps); the
dataclasses travel through Temporal as workflow arguments, so their field names are part of histories.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from workflows.calls import DEFAULT_MAX_TOOL_TIMEOUT_SECONDS
from workflows.transitions import Position


@dataclass
class ExecutionParams:
    """Everything an execution needs, fixed when it starts (the task version included)."""

    execution_id: str
    developer_id: str
    task: dict[str, Any]
    dialect: str
    input: Any
    agent: dict[str, Any] = field(default_factory=dict)
    task_info: dict[str, Any] = field(default_factory=dict)
    execution_info: dict[str, Any] = field(default_factory=dict)
    tools: list[dict[str, Any]] = field(default_factory=list)
    max_history_events: int = 10_000
    max_fan_out: int = 100_000  # items one foreach or map may run over (MINT_MAX_FAN_OUT)
    max_tool_timeout: float = DEFAULT_MAX_TOOL_TIMEOUT_SECONDS  # MINT_MAX_TOOL_TIMEOUT_SECONDS
    resume: ResumePoint | None = None  # set when the execution continued as new


@dataclass
class Frame:
    """One run of a named workflow, as expressions see it.

    `inputs[i]` is step i's input (inputs[0] the workflow's) and step i's output is inputs[i + 1], so the
    list holds everything (`outputs`, `steps[i]`) and inputs[-1] is always the latest value."""

    name: str
    scope_id: str
    inputs: list[Any]
    root: bool = False  # main's frame (or what replaced it through tail yields)
    depth: int = 0  # how many nested (non-tail) yields deep this run is

    @property
    def outputs(self) -> list[Any]:
        return self.inputs[1:]

    def position(self) -> Position:
        """Where the frame is now: the step about to run, or one past the last."""
        return Position(self.name, len(self.inputs) - 1, self.scope_id)

    def snapshot(self) -> dict[str, Any]:
        return {"name": self.name, "scope_id": self.scope_id, "inputs": self.inputs}

    @classmethod
    def restore(cls, data: dict[str, Any]) -> Frame:
        return cls(data["name"], data["scope_id"], data["inputs"], root=True)


@dataclass
class ResumePoint:
    """Where a continued-as-new execution picks up: the root frame, its next step, and all shared state."""

    frame: dict[str, Any]
    index: int
    seq: int
    state: dict[str, Any]
    labels: dict[str, Any]
    legacy: bool = True  # the execution runs as before issue 13 (a resume point written before has no field)


class StepsView:
    """`steps[0].output` (this workflow's steps by index) and `steps["label"]` (any labelled step)."""

    def __init__(self, frame: Frame, labels: dict[str, dict[str, Any]]):
        self._frame = frame
        self._labels = labels

    def __getitem__(self, key: Any) -> dict[str, Any]:
        if isinstance(key, str):
            return self._labels[key]
        inputs = self._frame.inputs
        if isinstance(key, int) and key < 0:
            key += len(inputs)
        if not isinstance(key, int) or not 0 <= key < len(inputs):
            raise KeyError(key)
        if key + 1 < len(inputs):
            return {"input": inputs[key], "output": inputs[key + 1]}
        return {"input": inputs[key]}  # the running step: its input is known, not its output
