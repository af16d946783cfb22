"""A run of steps in one activity (`durability: run`; workflows/step_runs.py, activities/step_runs.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from contracts.calls import CallFailure, Owner, RecordedAnswer
from contracts.executions import ExecutionParams, FrameSnapshot, StepRecord
from contracts.json import JsonObject
from contracts.transitions import TransitionBatch


@dataclass
class StepRun:
    """run_steps_in_worker's input: steps `first` to `first + count - 1` of workflow `frame["name"]` (pure
    steps and api_call steps), run by the workflow's own worker one after another as the interpreter would.

    Each call's answer is recorded under a call id, with the transitions of the steps before it, as soon as
    it answers; ids, keys and every random value come from `seed`, and `now` is the run's clock, so a run
    made again (a retry, or its workflow task lost with the worker) evaluates the same steps to the same
    values, makes only the calls that have no answer yet, and each call keeps its Idempotency-Key.
    `transitions` and `answers` are what the workflow had pending, as a WorkerCall's."""

    params: ExecutionParams  # without its resume point (the frame, state and labels are here)
    first: int
    count: int
    frame: FrameSnapshot
    state: JsonObject
    labels: dict[str, StepRecord]
    owner: Owner
    seed: int
    now: str  # ISO 8601
    seq: int  # the sequence number of the transition before the run's first
    transitions: TransitionBatch | None = None
    answers: list[RecordedAnswer] = field(default_factory=list)


@dataclass
class RanStep:
    """One step a run ran: its output and its transition's metadata (a call's attempts, a log's text)."""

    output: Any
    metadata: JsonObject | None = None


@dataclass
class StepRunOutcome:
    """What a run did: the steps it ran from its first, in order, each with its transition written, and the
    state after them. It stops early where a step cannot run in it (`handed_back`: the workflow then runs
    that step itself, which fails as it would have, if it fails), where a call failed its last attempt
    (`failure`) or answered what cannot be recorded (`unrecordable`), and once its outputs are large."""

    ran: list[RanStep]
    state: JsonObject
    failure: CallFailure | None = None
    failed_after: float | None = None  # the failed call's attempt timeout, in seconds
    # The next step's call answered, but its output cannot be recorded: why (UnrecordableValue's message).
    unrecordable: str | None = None
    # It stopped before a step that cannot run in it (not for a failure, nor to keep its outcome small).
    handed_back: bool = False
