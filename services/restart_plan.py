"""Where a restarted execution picks up (POST /executions/{id}/restart), worked out from the original's
transitions: the interpreter's resume point (the one continue-as-new uses) as of the end of the step before
the restart point, and the transitions to keep.

Recomputed by replaying the recorded outputs, so any execution can be restarted, including those recorded
before restarts existed, and no step pays to record what it might need later:
- the main frame's inputs: the execution's input, then the output of each top-level step before it;
- `state`: every `set` step's output (its updates), applied in order;
- labels: each labelled step's output, and its input (the output of the step before it in its sequence, or
  the input of its if/switch/parallel; a step at the start of a foreach or map body has the item as its
  input, which no transition records: there it is null).
A restart is from a top-level step of `main` (a transition inside it, such as a tool call of a prompt step
or the error that ended it, restarts its whole step); a step of a workflow `yield` called is restarted from
the `main` step that called it. Transitions name steps by the path the interpreter runs them under, which the
task's steps give through `lang.walk_steps` (workflows/language/nesting.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from contracts.executions import FrameSnapshot, StepRecord
from contracts.json import JsonObject, JsonValue
from contracts.records.executions import Transition
from workflows import language as lang


class CannotRestart(Exception):
    """The transition is no point to restart from; the message says why."""


@dataclass
class RestartPlan:
    index: int  # the top-level step of main to run again
    keep: list[Transition]  # the original's transitions before it, oldest first
    frame: FrameSnapshot  # main's frame
    state: JsonObject
    labels: dict[str, StepRecord]


def _records_output(transition: Transition) -> bool:
    """A `step` transition that records a step's output: not a model turn or tool call inside a prompt step,
    nor a prompt guardrail's verdict (recorded at the position of the step about to run)."""
    return transition.type == "step" and not {"turn", "tool", "guardrail"} & transition.metadata.keys()


def _ends_main_step(transition: Transition) -> bool:
    """A transition that ends a top-level step of main (its `next` is the step after)."""
    nxt, current = transition.next, transition.current
    return (
        transition.type == "step"
        and current.workflow == "main"
        and (nxt is None or (nxt.workflow == "main" and nxt.step == current.step + 1))
    )


def plan_restart(
    document: JsonObject,
    transitions: Sequence[Transition],
    from_id: str,
    new_input: JsonValue,
    has_input: bool,
) -> RestartPlan:
    """The plan to restart at the transition `from_id`, given all transitions up to it (oldest first)."""
    task = lang.TaskSpec.model_validate(document)
    if not transitions or transitions[0].type != "init":
        raise CannotRestart("the execution has no init transition to restart from")
    history = _History(transitions, _Steps.of(task))
    chosen = next(t for t in transitions if t.id == from_id)
    # A finish is recorded at the last step it ran, but comes after it: nothing is left to run.
    index = len(task.workflows["main"]) if chosen.type == "finish" else history.main_step(chosen)
    if index >= len(task.workflows["main"]):
        raise CannotRestart(
            f"transition {from_id} comes after main's last step: there is nothing to run again"
        )
    cut = history.ended(index - 1).seq if index else transitions[0].seq
    keep = [t for t in transitions if t.seq <= cut]
    history.transitions = keep
    inputs = [history.main_input(i) for i in range(index + 1)]
    if has_input:
        inputs[index] = new_input  # the step's `_`
    state: JsonObject = {}
    labels: dict[str, StepRecord] = {}
    for transition in history.transitions:
        if not _records_output(transition):
            continue
        current = transition.current
        step = history.steps.at.get((current.workflow, current.step))
        if isinstance(step, lang.SetStep) and isinstance(transition.output, dict):
            state.update(transition.output)
        if transition.step_label:
            step_input = history.input_of(transition, current.workflow, current.step, current.scope_id)
            labels[transition.step_label] = {"input": step_input, "output": transition.output}
    frame: FrameSnapshot = {"name": "main", "scope_id": history.main_scope, "inputs": inputs}
    return RestartPlan(index, keep, frame, state, labels)


@dataclass(frozen=True)
class _Steps:
    """The task's steps by where transitions place them (`current.workflow`, `current.step`), and the step
    each nested list of steps is in, by the list's path."""

    at: Mapping[tuple[str, int], lang.StepModel]
    parents: Mapping[str, lang.PlacedStep]

    @classmethod
    def of(cls, task: lang.TaskSpec) -> _Steps:
        at: dict[tuple[str, int], lang.StepModel] = {}
        parents: dict[str, lang.PlacedStep] = {}
        for name, steps in task.workflows.items():
            for placed in lang.walk_steps(steps, name):
                at[(placed.workflow, placed.index)] = placed.step
                if placed.parent is not None:
                    parents[placed.workflow] = placed.parent
        return cls(at, parents)

    def top(self, workflow: str) -> int | None:
        """The top-level step of main that a step list at `workflow` is nested in (None: in none)."""
        parent = self.parents.get(workflow)
        while parent is not None and parent.workflow != "main":
            parent = self.parents.get(parent.workflow)
        return None if parent is None else parent.index


@dataclass
class _History:
    """The original's transitions (oldest first), read against the task's steps."""

    transitions: Sequence[Transition]
    steps: _Steps

    @property
    def main_scope(self) -> str:
        return self.transitions[0].current.scope_id

    def main_step(self, transition: Transition) -> int:
        """The top-level step of main that a transition belongs to."""
        if transition.type == "init":
            return 0
        current = transition.current
        if current.scope_id != self.main_scope:
            # Inside a workflow a yield called: restart from the main step that was running then.
            before = self._before(transition, self.main_scope)
            if not before:
                raise CannotRestart("the transition is in no step of main")
            return self.main_step(before[-1]) + (1 if _ends_main_step(before[-1]) else 0)
        if current.workflow == "main":
            return current.step
        top = self.steps.top(current.workflow)
        if top is None:
            raise CannotRestart("the transition is in no step of main")
        return top

    def ended(self, step: int) -> Transition:
        """The transition that ended main's top-level step `step`."""
        for transition in reversed(self.transitions):
            current = transition.current
            if (
                current.scope_id == self.main_scope
                and current.workflow == "main"
                and current.step == step
                and _ends_main_step(transition)
            ):
                return transition
        raise CannotRestart(f"main[{step}] never ended, so the steps after it cannot be restarted")

    def main_input(self, index: int) -> JsonValue:
        """The input of main's top-level step `index`: the execution's input, or the step before's output."""
        return self.transitions[0].output if index == 0 else self.ended(index - 1).output

    def input_of(self, transition: Transition, workflow: str, index: int, scope: str) -> JsonValue:
        """The input of the step at (workflow, index) in `scope` that `transition` ended."""
        before = self._before(transition, scope)
        if index > 0:
            for earlier in reversed(before):
                current = earlier.current
                if _records_output(earlier) and current.workflow == workflow and current.step == index - 1:
                    return earlier.output
            return None
        parent = self.steps.parents.get(workflow)
        if parent is None:  # the first step of a named workflow: the workflow's input
            started = [t for t in before if t.type in ("init", "init_branch")]
            return started[-1].output if started else None
        if isinstance(parent.step, lang.ForeachStep | lang.MapReduceStep):
            return None  # the item, which no transition records
        if parent.workflow == "main" and scope == self.main_scope:
            return self.main_input(parent.index)
        return self.input_of(transition, parent.workflow, parent.index, scope)

    def _before(self, transition: Transition, scope: str) -> list[Transition]:
        return [t for t in self.transitions if t.seq < transition.seq and t.current.scope_id == scope]
