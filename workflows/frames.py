"""A frame per run of a named workflow, and the view of `steps` that expressions read.

Plain data, shared by the interpreter and the modules it delegates to (fan_out, call_steps). What an execution
runs with (ExecutionParams) and the point a continued-as-new run resumes from (ResumePoint) travel through
Temporal, so they are contracts (contracts/executions.py); a frame travels only as its snapshot().
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

from contracts.executions import ExecutionParams, FrameSnapshot, StepRecord
from contracts.json import JsonObject, JsonValue
from contracts.transitions import Position
from workflows.values import Names


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

    def last_position(self) -> Position:
        """The step that ran last (the first, before any ran): where a finish is recorded, as on Julep."""
        return Position(self.name, max(len(self.inputs) - 2, 0), self.scope_id)

    def snapshot(self) -> FrameSnapshot:
        return {"name": self.name, "scope_id": self.scope_id, "inputs": self.inputs}

    @classmethod
    def restore(cls, data: FrameSnapshot) -> Frame:
        return cls(data["name"], data["scope_id"], data["inputs"], root=True)


class StartedStep(TypedDict):
    """What `steps[i]` reads of the step running now: its input (its output is not known yet)."""

    input: JsonValue


class StepsView:
    """`steps[0].output` (this workflow's steps by index) and `steps["label"]` (any labelled step)."""

    def __init__(self, frame: Frame, labels: dict[str, StepRecord]):
        self._frame = frame
        self._labels = labels

    def __getitem__(self, key: object) -> StepRecord | StartedStep:
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


def names_of(
    value: Any,
    frame: Frame,
    labels: dict[str, StepRecord],
    state: JsonObject,
    params: ExecutionParams,
    metadata: JsonObject,
) -> Names:
    """What a step's expressions and templates read: `_` (its input), the frame's inputs, outputs and steps,
    the execution's state, and the agent, task, execution and metadata (`metadata`, task_metadata's)."""
    return {
        "_": value,
        "inputs": frame.inputs,
        "outputs": frame.outputs,
        "steps": StepsView(frame, labels),
        "state": state,
        "agent": params.agent,
        "task": params.task_info,
        "execution": params.execution_info,
        "metadata": metadata,
    }
