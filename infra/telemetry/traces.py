"""An execution's trace (`GET /executions/{id}/trace`), read from the transitions Mint already records.

Nothing is written on the hot path for traces: a step's transition says when it ended (`created_at`), a model
call's metadata when the call started (`started_at`), which model and what it cost, a tool-loop call's result
how long it took (`duration_ms`), a yield's `init_branch` names the run and step that called it, and a fan-out chunk's
transitions carry the chunk's own run id (workflows/transition_log.py). From those this module rebuilds the
items, in the order Mint recorded them (a step's start comes before what runs inside it):

    run_start, step_start, llm_call_start, llm_call_end, tool_call_start, tool_call_end, handoff,
    guardrail, step_end, run_end

A run is one run of a named workflow: `main`, a workflow a `yield` runs (its frame's scope id is the run
id), or a fan-out chunk's child workflow (its Temporal run id). The trace id is the execution id's 32 hex
digits, so every run of the execution (and the OTLP spans, infra/telemetry/tracing.py) shares it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from contracts.json import JsonObject, JsonValue
from contracts.records.executions import Position, Transition

# `main[1].map[0].then` holds the containers main[1] and main[1].map[0]: a step of a branch or body runs
# inside the step whose path it extends.
_CONTAINER = re.compile(r"\[(\d+)\]\.")
_BODY = re.compile(r"\[\d+\]\.(?:map|foreach)(?=$|\[)")  # a fan-out's body: its steps run once per item
_OUTCOMES = {"finish": "succeeded", "error": "failed", "cancelled": "cancelled"}

StepKey = tuple[str, str, int, JsonValue]  # (run id, workflow path, step index, fan-out item or None)


def trace_id(execution_id: str) -> str:
    """The execution's trace id: its uuid as 32 hex digits (W3C and OTLP trace ids are 16 bytes)."""
    return uuid.UUID(execution_id).hex


@dataclass(frozen=True)
class _Transition:
    """A transition as the trace reads it: where it ran (`current`), its metadata ({} for none), and when."""

    kind: str
    output: JsonValue
    current: Position
    metadata: JsonObject
    at: str

    @classmethod
    def of(cls, stored: Transition) -> _Transition:
        return cls(stored.type, stored.output, stored.current, stored.metadata, stored.created_at.isoformat())

    @property
    def scope_id(self) -> str:
        return self.current.scope_id

    @property
    def workflow(self) -> str:
        return self.current.workflow

    def note(self, name: str) -> str | None:
        """A text the metadata holds under `name` (None when it holds none, or something else)."""
        value = self.metadata.get(name)
        return value if isinstance(value, str) else None

    def output_object(self) -> JsonObject:
        return self.output if isinstance(self.output, dict) else {}


@dataclass
class _Run:
    run_id: str
    parent_step: StepKey | None = None
    path: str | None = None  # a chunk's fan-out body path: steps above it belong to the parent run
    parent_run_id: str | None = None


@dataclass
class _Builder:
    """Walks the transitions in order, opening runs and steps as their first trace appears."""

    items: list[JsonObject] = field(default_factory=list)
    runs: dict[str, _Run] = field(default_factory=dict)  # the open runs, in the order they started
    steps: dict[StepKey, JsonObject] = field(default_factory=dict)  # open steps -> their step_start's data
    last_at: dict[str, str] = field(default_factory=dict)  # per run: its latest transition's time
    opened: list[tuple[str, str | StepKey]] = field(
        default_factory=list
    )  # ("run", id), ("step", key), in order

    def item(self, kind: str, run_id: str, at: str, data: JsonObject) -> None:
        self.items.append({"type": kind, "run_id": run_id, "at": at, "data": data})

    # Runs --------------------------------------------------------------------------------------------------

    def start_run(self, run: _Run, at: str, workflow: str) -> None:
        if run.parent_step is not None:
            self.open_step(run.parent_step, at)
        self.runs[run.run_id] = run
        self.last_at[run.run_id] = at
        self.opened.append(("run", run.run_id))
        self.item("run_start", run.run_id, at, {"workflow": workflow, "parent_run_id": run.parent_run_id})

    def end_run(self, run_id: str, at: str, outcome: str, data: JsonObject | None = None) -> None:
        if self.runs.pop(run_id, None) is not None:
            self.item("run_end", run_id, at, {"outcome": outcome, **(data or {})})

    def run_of(self, transition: _Transition) -> str:
        """The run a transition belongs to; a chunk's first transition starts its run."""
        run_id = transition.note("run_id") or transition.scope_id
        path = transition.note("run_path")
        if run_id not in self.runs and path is not None:
            parent = transition.scope_id
            holders = _containers(path, None)
            parent_step = (parent, holders[-1][0], holders[-1][1], None) if holders else None
            run = _Run(run_id, parent_step, path, parent)
            self.start_run(run, transition.note("run_started_at") or transition.at, transition.workflow)
        return run_id

    # Steps -------------------------------------------------------------------------------------------------

    def open_step(self, key: StepKey, at: str) -> JsonObject:
        found = self.steps.get(key)
        if found is None:
            run_id, workflow, step, item = key
            found = {"workflow": workflow, "step": step, **({"item": item} if item is not None else {})}
            self.steps[key] = found
            self.item("step_start", run_id, at, found)
            self.opened.append(("step", key))
        return found

    def close_step(self, key: StepKey, at: str, data: JsonObject | None = None) -> None:
        start = self.open_step(key, at)
        del self.steps[key]
        # Runs started inside this step (fan-out chunks) have ended by the time it does.
        for run in [r for r in self.runs.values() if r.parent_step == key]:
            self.end_run(run.run_id, self.last_at.get(run.run_id) or at, "succeeded")
        self.item("step_end", key[0], at, {**start, **(data or {})})

    def step_key(self, run_id: str, transition: _Transition) -> StepKey:
        return (run_id, transition.workflow, transition.current.step, transition.metadata.get("item"))

    def open_containers(self, run_id: str, transition: _Transition, at: str) -> None:
        """Open the steps whose branches or bodies hold this transition's step (outermost first)."""
        run = self.runs.get(run_id)
        for workflow, step, in_item in _containers(transition.workflow, transition.metadata.get("item")):
            owner = run_id
            if run is not None and run.path is not None and not workflow.startswith(run.path):
                owner = run.parent_run_id or run_id  # above a chunk's body: the parent run's step
            self.open_step((owner, workflow, step, in_item), at)


def build_trace(execution: Mapping[str, str], transitions: Sequence[Transition]) -> JsonObject:
    """The trace of an execution (its `id` is read) from its transitions (oldest first)."""
    builder = _Builder()
    for row in transitions:
        _add(builder, _Transition.of(row))
    items: list[JsonValue] = list(builder.items)
    return {"trace_id": trace_id(str(execution["id"])), "items": items}


def _add(builder: _Builder, transition: _Transition) -> None:
    at = transition.at
    run_id = _enter_run(builder, transition)
    previous = builder.last_at.get(run_id, at)
    builder.last_at[run_id] = at
    _record(builder, run_id, transition, previous)
    ended = transition.note("run_ended")
    if ended is not None:  # a fan-out child's last transition
        builder.end_run(ended, at, "succeeded")


def _enter_run(builder: _Builder, transition: _Transition) -> str:
    """The run the transition belongs to, started if this transition starts it."""
    kind, at = transition.kind, transition.at
    if kind == "init":
        builder.start_run(_Run(transition.scope_id), at, transition.workflow)
    elif kind == "init_branch":
        _start_branch(builder, transition)
    run_id = builder.run_of(transition)
    if run_id not in builder.runs and kind not in _OUTCOMES:  # a history from before traces
        builder.start_run(_Run(run_id), at, transition.workflow)
    return run_id


def _record(builder: _Builder, run_id: str, transition: _Transition, previous: str) -> None:
    """The items of one transition, by its type."""
    kind, metadata, at = transition.kind, transition.metadata, transition.at
    if kind == "step" and metadata.get("stage") in ("input", "output") and "guardrail" in metadata:
        _verdict(builder, run_id, transition, previous)
    elif kind in ("step", "wait", "resume"):
        builder.open_containers(run_id, transition, previous)
        key = builder.step_key(run_id, transition)
        builder.open_step(key, transition.note("started_at") or previous)
        _calls(builder, run_id, transition, previous)
        _notes(builder, run_id, transition)
        if kind == "step" and metadata.get("call") is None:  # a loop's call is part of its step
            builder.close_step(key, at)
    elif kind in _OUTCOMES:
        _notes(builder, run_id, transition)
        _end_all(builder, transition)
    else:
        _notes(builder, run_id, transition)
        if kind == "finish_branch":
            builder.end_run(run_id, at, "succeeded")


def _start_branch(builder: _Builder, transition: _Transition) -> None:
    """A yield's run starts (nested in the step that called it), or takes over from its caller (a tail
    call: the caller's run ends here)."""
    caller = transition.note("caller_run_id")
    step = transition.metadata.get("caller_step")
    parent_step: StepKey | None = None
    if caller is not None and transition.metadata.get("tail"):
        builder.end_run(caller, transition.at, "handed_over", {"to": transition.scope_id})
    elif caller is not None and isinstance(step, dict):
        index = step["step"]
        parent_step = (
            caller,
            str(step["workflow"]),
            index if isinstance(index, int) else 0,
            step.get("item"),
        )
    run = _Run(transition.scope_id, parent_step, parent_run_id=caller)
    builder.start_run(run, transition.at, transition.workflow)


def _end_all(builder: _Builder, transition: _Transition) -> None:
    """The execution ended: the steps still open end with it, then its runs, innermost first."""
    outcome = _OUTCOMES[transition.kind]
    data: JsonObject = {}
    if outcome == "failed":
        output = transition.output
        data["error"] = output.get("error") if isinstance(output, dict) else output
        if transition.metadata.get("error_type"):
            data["error_type"] = transition.metadata["error_type"]
    for kind, key in reversed(builder.opened):  # innermost first
        if kind == "step" and isinstance(key, tuple) and key in builder.steps:
            builder.close_step(key, transition.at, {"outcome": outcome})
        elif kind == "run" and isinstance(key, str) and key in builder.runs:
            builder.end_run(key, transition.at, outcome, data)


def _calls(builder: _Builder, run_id: str, transition: _Transition, previous: str) -> None:
    """A model call's or a tool-loop call's start and end items, from the transition that recorded it."""
    metadata, at = transition.metadata, transition.at
    usage = metadata.get("usage")
    if isinstance(usage, dict):
        prompt, completion = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
        model = metadata.get("model")
        builder.item("llm_call_start", run_id, transition.note("started_at") or at, {"model": model})
        end: JsonObject = {"model": model, "tokens": prompt + completion, "prompt_tokens": prompt}
        builder.item(
            "llm_call_end", run_id, at, {**end, "completion_tokens": completion, "cost": metadata.get("cost")}
        )
    elif metadata.get("call") == "tool":
        _tool_call(builder, run_id, transition, previous)


def _tool_call(builder: _Builder, run_id: str, transition: _Transition, previous: str) -> None:
    output, at = transition.output_object(), transition.at
    call, result = _object(output.get("tool_call")), _object(output.get("result"))
    name = transition.metadata.get("tool") or call.get("name")
    started = transition.note("started_at") or at
    duration = result.get("duration_ms")
    if isinstance(duration, int):  # it started that long before it was recorded
        # (not before what came before it: the duration is rounded to the millisecond)
        started = max(_moment(at) - timedelta(milliseconds=duration), _moment(previous)).isoformat()
    start: JsonObject = {"name": name, "call_id": call.get("id"), "arguments": call.get("arguments")}
    builder.item("tool_call_start", run_id, started, start)
    end: JsonObject = {"name": name, "call_id": call.get("id"), "status": result.get("status")}
    if result.get("error") is not None:
        end["error"] = result["error"]
    builder.item("tool_call_end", run_id, at, end)


def _verdict(builder: _Builder, run_id: str, transition: _Transition, previous: str) -> None:
    """A prompt guardrail's verdict: its model call and a `guardrail` item, but no step of its own (it is
    recorded at the position of the step about to run, or one past main's last for the output)."""
    _calls(builder, run_id, transition, previous)
    verdict = transition.output_object()
    data: JsonObject = {
        "name": transition.metadata["guardrail"],
        "stage": transition.metadata["stage"],
        "allowed": verdict.get("allowed"),
        "reason": verdict.get("reason"),
    }
    builder.item("guardrail", run_id, transition.at, data)


def _notes(builder: _Builder, run_id: str, transition: _Transition) -> None:
    """Handoff and guardrail items, from the metadata the tool loop and the guardrails record:
    `handoff: {from, to}` and `guardrail: {name, ...}` (passed on as they are)."""
    handoff = transition.metadata.get("handoff")
    if isinstance(handoff, dict):
        builder.item("handoff", run_id, transition.at, {"from": handoff.get("from"), "to": handoff.get("to")})
    guardrail = transition.metadata.get("guardrail")
    for one in guardrail if isinstance(guardrail, list) else [guardrail] if guardrail else []:
        builder.item("guardrail", run_id, transition.at, one if isinstance(one, dict) else {"name": one})


def _containers(path: str, item: JsonValue) -> list[tuple[str, int, JsonValue]]:
    """The steps that hold a step at `path`, outermost first: (workflow path, step, item). Only those inside
    the innermost fan-out body run once per item (the item a transition records is the innermost one)."""
    body = _body_path(path)
    return [
        (path[: m.start()], int(m.group(1)), item if body and path[: m.start()].startswith(body) else None)
        for m in _CONTAINER.finditer(path)
    ]


def _body_path(path: str) -> str | None:
    """The innermost fan-out body (`main[1].map`) that `path` is in or below, if any."""
    best = None
    for m in _BODY.finditer(path):
        best = path[: m.end()]
    return best


def _object(value: JsonValue) -> JsonObject:
    return value if isinstance(value, dict) else {}


def _count(value: JsonValue) -> int:
    """A token count as usage records it (a number, or missing)."""
    return int(value) if isinstance(value, int | float) else 0


def _moment(at: str) -> datetime:
    return datetime.fromisoformat(at)
