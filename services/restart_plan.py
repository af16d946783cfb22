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
the `main` step that called it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from workflows import language as lang

# A runtime sequence path: `main`, `main[2].then`, `main[2].switch[1]`, `main[3].parallel[0]`, ...
_PARENT = re.compile(
    r"^(?P<parent>.+)\[(?P<index>\d+)\]\.(?P<kind>then|else|switch\[\d+\]|foreach|map|parallel\[\d+\])$"
)
_TOP = re.compile(r"^main\[(?P<index>\d+)\]")


class CannotRestart(Exception):
    """The transition is no point to restart from; the message says why."""


@dataclass
class RestartPlan:
    index: int  # the top-level step of main to run again
    keep: list[dict[str, Any]]  # the original's transitions before it, oldest first
    frame: dict[str, Any]  # the main frame's snapshot (workflows.frames.Frame)
    state: dict[str, Any]
    labels: dict[str, Any]


def plan_restart(
    document: dict[str, Any], rows: list[dict[str, Any]], from_id: str, new_input: Any, has_input: bool
) -> RestartPlan:
    """The plan to restart at the transition `from_id`, given all transitions up to it (oldest first)."""
    task = lang.TaskSpec.model_validate(document)
    if not rows or rows[0]["type"] != "init":
        raise CannotRestart("the execution has no init transition to restart from")
    main_scope = rows[0]["current"]["scope_id"]
    chosen = next(r for r in rows if str(r["id"]) == from_id)
    index = _main_step(chosen, main_scope, rows)
    if index >= len(task.workflows["main"]):
        raise CannotRestart(
            f"transition {from_id} comes after main's last step: there is nothing to run again"
        )
    cut = _end_of_step(rows, main_scope, index - 1) if index else rows[0]["seq"]
    keep = [r for r in rows if r["seq"] <= cut]
    inputs = [rows[0]["output"]] + [_ended(keep, main_scope, i)["output"] for i in range(index)]
    if has_input:
        inputs[index] = new_input  # the step's `_`
    sequences = _sequences(task)
    state: dict[str, Any] = {}
    labels: dict[str, Any] = {}
    for row in keep:
        if not _step_output(row):
            continue
        current = row["current"]
        step = _step_at(sequences, current["workflow"], current["step"])
        if isinstance(step, lang.SetStep) and isinstance(row["output"], dict):
            state.update(row["output"])
        if row["step_label"]:
            step_input = _input_of(keep, row, current["workflow"], current["step"], current["scope_id"])
            labels[row["step_label"]] = {"input": step_input, "output": row["output"]}
    frame = {"name": "main", "scope_id": main_scope, "inputs": inputs}
    return RestartPlan(index, keep, frame, state, labels)


def _main_step(row: dict[str, Any], main_scope: str, rows: list[dict[str, Any]]) -> int:
    """The top-level step of main that a transition belongs to."""
    if row["type"] == "init":
        return 0
    current = row["current"]
    if current["scope_id"] != main_scope:
        # Inside a workflow a yield called: restart from the main step that was running then.
        before = [r for r in rows if r["seq"] < row["seq"] and r["current"]["scope_id"] == main_scope]
        if not before:
            raise CannotRestart("the transition is in no step of main")
        return _main_step(before[-1], main_scope, rows) + (1 if _ends_step(before[-1]) else 0)
    if current["workflow"] == "main":
        return int(current["step"])
    found = _TOP.match(current["workflow"])
    if found is None:
        raise CannotRestart("the transition is in no step of main")
    return int(found["index"])


def _step_output(row: dict[str, Any]) -> bool:
    """A `step` transition that records a step's output: not a model turn or tool call inside a prompt step,
    nor a prompt guardrail's verdict (recorded at the position of the step about to run)."""
    metadata = row["metadata"] or {}
    return row["type"] == "step" and not {"turn", "tool", "guardrail"} & metadata.keys()


def _ends_step(row: dict[str, Any]) -> bool:
    """A transition that ends a top-level step of main (its `next` is the step after)."""
    nxt = row["next"]
    return (
        row["type"] == "step"
        and row["current"]["workflow"] == "main"
        and (nxt is None or (nxt["workflow"] == "main" and nxt["step"] == row["current"]["step"] + 1))
    )


def _ended(rows: list[dict[str, Any]], scope: str, step: int) -> dict[str, Any]:
    for row in reversed(rows):
        current = row["current"]
        if (
            current["scope_id"] == scope
            and current["workflow"] == "main"
            and current["step"] == step
            and _ends_step(row)
        ):
            return row
    raise CannotRestart(f"main[{step}] never ended, so the steps after it cannot be restarted")


def _end_of_step(rows: list[dict[str, Any]], scope: str, step: int) -> int:
    return int(_ended(rows, scope, step)["seq"])


def _sequences(task: lang.TaskSpec) -> dict[str, list[Any]]:
    """Every step list of the task by its runtime path (as transitions name it)."""
    found: dict[str, list[Any]] = {}

    def walk(path: str, steps: list[Any]) -> None:
        found[path] = steps
        for i, step in enumerate(steps):
            here = f"{path}[{i}]"
            match step:
                case lang.IfElseStep():
                    walk(f"{here}.then", list(step.then))
                    if step.else_:
                        walk(f"{here}.else", list(step.else_))
                case lang.SwitchStep():
                    for j, branch in enumerate(step.switch):
                        walk(f"{here}.switch[{j}]", list(branch.then))
                case lang.ForeachStep():
                    walk(f"{here}.foreach", list(step.foreach.do))
                case lang.MapReduceStep():
                    walk(f"{here}.map", list(step.map))
                case lang.ParallelStep():
                    for j, lane in enumerate(step.parallel):
                        walk(f"{here}.parallel[{j}]", list(lane))

    for name, steps in task.workflows.items():
        walk(name, list(steps))
    return found


def _step_at(sequences: dict[str, list[Any]], path: str, index: int) -> Any:
    steps = sequences.get(path) or []
    return steps[index] if 0 <= index < len(steps) else None


def _input_of(rows: list[dict[str, Any]], row: dict[str, Any], path: str, index: int, scope: str) -> Any:
    """The input of the step at (path, index) in `scope` that `row` ended."""
    before = [r for r in rows if r["seq"] < row["seq"] and r["current"]["scope_id"] == scope]
    if index > 0:
        for earlier in reversed(before):
            current = earlier["current"]
            if _step_output(earlier) and current["workflow"] == path and current["step"] == index - 1:
                return earlier["output"]
        return None
    nested = _PARENT.match(path)
    if nested is None:  # the first step of a named workflow: the workflow's input
        started = [r for r in before if r["type"] in ("init", "init_branch")]
        return started[-1]["output"] if started else None
    if nested["kind"] in ("foreach", "map"):
        return None  # the item, which no transition records
    parent_path, parent_index = nested["parent"], int(nested["index"])
    if parent_path == "main" and scope == rows[0]["current"]["scope_id"]:
        return _main_input(rows, parent_index)
    return _input_of(rows, row, parent_path, parent_index, scope)


def _main_input(rows: list[dict[str, Any]], index: int) -> Any:
    if index == 0:
        return rows[0]["output"]
    return _ended(rows, rows[0]["current"]["scope_id"], index - 1)["output"]
