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
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

# `main[1].map[0].then` holds the containers main[1] and main[1].map[0]: a step of a branch or body runs
# inside the step whose path it extends.
_CONTAINER = re.compile(r"\[(\d+)\]\.")
_BODY = re.compile(r"\[\d+\]\.(?:map|foreach)(?=$|\[)")  # a fan-out's body: its steps run once per item
_OUTCOMES = {"finish": "succeeded", "error": "failed", "cancelled": "cancelled"}

StepKey = tuple[str, str, int, Any]  # (run id, workflow path, step index, fan-out item or None)


def trace_id(execution_id: str) -> str:
    """The execution's trace id: its uuid as 32 hex digits (W3C and OTLP trace ids are 16 bytes)."""
    return uuid.UUID(execution_id).hex


@dataclass
class _Run:
    run_id: str
    parent_step: StepKey | None = None
    path: str | None = None  # a chunk's fan-out body path: steps above it belong to the parent run
    parent_run_id: str | None = None


@dataclass
class _Builder:
    """Walks the transitions in order, opening runs and steps as their first trace appears."""

    items: list[dict[str, Any]] = field(default_factory=list)
    runs: dict[str, _Run] = field(default_factory=dict)  # the open runs, in the order they started
    steps: dict[StepKey, dict[str, Any]] = field(default_factory=dict)  # open steps -> their step_start
    last_at: dict[str, str] = field(default_factory=dict)  # per run: its latest transition's time
    opened: list[tuple[str, Any]] = field(default_factory=list)  # ("run", id) and ("step", key), in order

    def item(self, kind: str, run_id: str, at: str, **data: Any) -> dict[str, Any]:
        entry = {"type": kind, "run_id": run_id, "at": at, "data": data}
        self.items.append(entry)
        return entry

    # Runs --------------------------------------------------------------------------------------------------

    def start_run(self, run: _Run, at: str, workflow: str) -> None:
        if run.parent_step is not None:
            self.open_step(run.parent_step, at)
        self.runs[run.run_id] = run
        self.last_at[run.run_id] = at
        self.opened.append(("run", run.run_id))
        self.item("run_start", run.run_id, at, workflow=workflow, parent_run_id=run.parent_run_id)

    def end_run(self, run_id: str, at: str, outcome: str, **data: Any) -> None:
        if self.runs.pop(run_id, None) is not None:
            self.item("run_end", run_id, at, outcome=outcome, **data)

    def run_of(self, transition: dict[str, Any]) -> str:
        """The run a transition belongs to; a chunk's first transition starts its run."""
        metadata, current = transition["metadata"], transition["current"]
        run_id = str(metadata.get("run_id") or current["scope_id"])
        if run_id not in self.runs and "run_path" in metadata:
            path = metadata["run_path"]
            parent = current["scope_id"]
            holders = _containers(path, None)
            parent_step = (parent, holders[-1][0], holders[-1][1], None) if holders else None
            run = _Run(run_id, parent_step, path, parent)
            self.start_run(run, metadata.get("run_started_at") or _at(transition), current["workflow"])
        return run_id

    # Steps -------------------------------------------------------------------------------------------------

    def open_step(self, key: StepKey, at: str) -> dict[str, Any]:
        found = self.steps.get(key)
        if found is None:
            run_id, workflow, step, item = key
            data: dict[str, Any] = {"workflow": workflow, "step": step}
            if item is not None:
                data["item"] = item
            found = self.steps[key] = self.item("step_start", run_id, at, **data)
            self.opened.append(("step", key))
        return found

    def close_step(self, key: StepKey, at: str, **data: Any) -> None:
        start = self.open_step(key, at)
        del self.steps[key]
        # Runs started inside this step (fan-out chunks) have ended by the time it does.
        for run in [r for r in self.runs.values() if r.parent_step == key]:
            self.end_run(run.run_id, self.last_at.get(run.run_id) or at, "succeeded")
        self.item("step_end", key[0], at, **{**start["data"], **data})

    def step_key(self, run_id: str, transition: dict[str, Any]) -> StepKey:
        current = transition["current"]
        return (run_id, current["workflow"], current["step"], transition["metadata"].get("item"))

    def open_containers(self, run_id: str, transition: dict[str, Any], at: str) -> None:
        """Open the steps whose branches or bodies hold this transition's step (outermost first)."""
        current, item = transition["current"], transition["metadata"].get("item")
        run = self.runs.get(run_id)
        for workflow, step, in_item in _containers(current["workflow"], item):
            owner = run_id
            if run is not None and run.path is not None and not workflow.startswith(run.path):
                owner = run.parent_run_id or run_id  # above a chunk's body: the parent run's step
            self.open_step((owner, workflow, step, in_item), at)


def build_trace(execution: dict[str, Any], transitions: list[dict[str, Any]]) -> dict[str, Any]:
    """The trace of an execution from its transitions (oldest first)."""
    builder = _Builder()
    for transition in transitions:
        transition = {**transition, "metadata": transition.get("metadata") or {}}
        _add(builder, transition)
    return {"trace_id": trace_id(str(execution["id"])), "items": builder.items}


def _add(builder: _Builder, transition: dict[str, Any]) -> None:
    metadata, at = transition["metadata"], _at(transition)
    run_id = _enter_run(builder, transition, at)
    previous = builder.last_at.get(run_id, at)
    builder.last_at[run_id] = at
    _record(builder, run_id, transition, at, previous)
    if isinstance(metadata.get("run_ended"), str):  # a fan-out child's last transition
        builder.end_run(metadata["run_ended"], at, "succeeded")


def _enter_run(builder: _Builder, transition: dict[str, Any], at: str) -> str:
    """The run the transition belongs to, started if this transition starts it."""
    kind, current = transition["type"], transition["current"]
    if kind == "init":
        builder.start_run(_Run(current["scope_id"]), at, current["workflow"])
    elif kind == "init_branch":
        _start_branch(builder, transition, at)
    run_id = builder.run_of(transition)
    if run_id not in builder.runs and kind not in _OUTCOMES:  # a history from before traces
        builder.start_run(_Run(run_id), at, current["workflow"])
    return run_id


def _record(builder: _Builder, run_id: str, transition: dict[str, Any], at: str, previous: str) -> None:
    """The items of one transition, by its type."""
    kind, metadata = transition["type"], transition["metadata"]
    if kind == "step" and metadata.get("stage") in ("input", "output") and "guardrail" in metadata:
        _verdict(builder, run_id, transition, at, previous)
    elif kind in ("step", "wait", "resume"):
        builder.open_containers(run_id, transition, previous)
        key = builder.step_key(run_id, transition)
        builder.open_step(key, _call_start(transition) or previous)
        _calls(builder, run_id, transition, at, previous)
        _notes(builder, run_id, transition, at)
        if kind == "step" and metadata.get("call") is None:  # a loop's call is part of its step
            builder.close_step(key, at)
    elif kind in _OUTCOMES:
        _notes(builder, run_id, transition, at)
        _end_all(builder, transition, at)
    else:
        _notes(builder, run_id, transition, at)
        if kind == "finish_branch":
            builder.end_run(run_id, at, "succeeded")


def _start_branch(builder: _Builder, transition: dict[str, Any], at: str) -> None:
    """A yield's run starts (nested in the step that called it), or takes over from its caller (a tail
    call: the caller's run ends here)."""
    metadata, current = transition["metadata"], transition["current"]
    caller = metadata.get("caller_run_id")
    parent_step = None
    if caller is not None and metadata.get("tail"):
        builder.end_run(caller, at, "handed_over", to=current["scope_id"])
    elif caller is not None and isinstance(metadata.get("caller_step"), dict):
        step = metadata["caller_step"]
        parent_step = (caller, step["workflow"], step["step"], step.get("item"))
    builder.start_run(_Run(current["scope_id"], parent_step, parent_run_id=caller), at, current["workflow"])


def _end_all(builder: _Builder, transition: dict[str, Any], at: str) -> None:
    """The execution ended: the steps still open end with it, then its runs, innermost first."""
    outcome = _OUTCOMES[transition["type"]]
    data: dict[str, Any] = {}
    if outcome == "failed":
        output = transition.get("output")
        data["error"] = output.get("error") if isinstance(output, dict) else output
        if transition["metadata"].get("error_type"):
            data["error_type"] = transition["metadata"]["error_type"]
    for kind, key in reversed(builder.opened):  # innermost first
        if kind == "step" and key in builder.steps:
            builder.close_step(key, at, outcome=outcome)
        elif kind == "run" and key in builder.runs:
            builder.end_run(key, at, outcome, **data)


def _calls(builder: _Builder, run_id: str, transition: dict[str, Any], at: str, previous: str) -> None:
    """A model call's or a tool-loop call's start and end items, from the transition that recorded it."""
    metadata = transition["metadata"]
    started = metadata.get("started_at") or at
    if isinstance(metadata.get("usage"), dict):
        usage = metadata["usage"]
        prompt = int(usage.get("prompt_tokens") or 0)
        completion = int(usage.get("completion_tokens") or 0)
        model = metadata.get("model")
        builder.item("llm_call_start", run_id, started, model=model)
        builder.item(
            "llm_call_end",
            run_id,
            at,
            model=model,
            tokens=prompt + completion,
            prompt_tokens=prompt,
            completion_tokens=completion,
            cost=metadata.get("cost"),
        )
    elif metadata.get("call") == "tool":
        recorded = transition.get("output")
        output: dict[str, Any] = recorded if isinstance(recorded, dict) else {}
        call = output.get("tool_call") or {}
        result = output.get("result") or {}
        name = metadata.get("tool") or call.get("name")
        if isinstance(result.get("duration_ms"), int):  # it started that long before it was recorded
            # (not before what came before it: the duration is rounded to the millisecond)
            started = max(
                _moment(at) - timedelta(milliseconds=result["duration_ms"]), _moment(previous)
            ).isoformat()
        builder.item(
            "tool_call_start",
            run_id,
            started,
            name=name,
            call_id=call.get("id"),
            arguments=call.get("arguments"),
        )
        end = {"name": name, "call_id": call.get("id"), "status": result.get("status")}
        if result.get("error") is not None:
            end["error"] = result["error"]
        builder.item("tool_call_end", run_id, at, **end)


def _verdict(builder: _Builder, run_id: str, transition: dict[str, Any], at: str, previous: str) -> None:
    """A prompt guardrail's verdict: its model call and a `guardrail` item, but no step of its own (it is
    recorded at the position of the step about to run, or one past main's last for the output)."""
    metadata = transition["metadata"]
    _calls(builder, run_id, transition, at, previous)
    output = transition.get("output")
    verdict: dict[str, Any] = output if isinstance(output, dict) else {}
    builder.item(
        "guardrail",
        run_id,
        at,
        name=metadata["guardrail"],
        stage=metadata["stage"],
        allowed=verdict.get("allowed"),
        reason=verdict.get("reason"),
    )


def _notes(builder: _Builder, run_id: str, transition: dict[str, Any], at: str) -> None:
    """Handoff and guardrail items, from the metadata the tool loop and the guardrails record:
    `handoff: {from, to}` and `guardrail: {name, ...}` (passed on as they are)."""
    metadata = transition["metadata"]
    handoff = metadata.get("handoff")
    if isinstance(handoff, dict):
        builder.item("handoff", run_id, at, **{"from": handoff.get("from"), "to": handoff.get("to")})
    guardrail = metadata.get("guardrail")
    for one in guardrail if isinstance(guardrail, list) else [guardrail] if guardrail else []:
        builder.item("guardrail", run_id, at, **(one if isinstance(one, dict) else {"name": one}))


def _call_start(transition: dict[str, Any]) -> str | None:
    """When the call a transition records started, if it records one (its step started no later)."""
    started = transition["metadata"].get("started_at")
    return started if isinstance(started, str) else None


def _containers(path: str, item: Any) -> list[tuple[str, int, Any]]:
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


def _moment(at: str) -> datetime:
    return datetime.fromisoformat(at)


def _at(transition: dict[str, Any]) -> str:
    created = transition["created_at"]
    return created.isoformat() if isinstance(created, datetime) else str(created)
