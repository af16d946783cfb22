"""Transition types, the statuses they lead to, the one place that decides which sequences are allowed, and
the shape of a transition as the workflow hands it to the writer.

The store (infra/store/executions.py) and the writer (activities/transitions.py) enforce the rules; the
interpreter (workflows/) produces the transitions. All of them import this module, so the rules live once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

TERMINAL_TYPES = frozenset({"finish", "error", "cancelled"})
TERMINAL_STATUSES = frozenset({"succeeded", "failed", "cancelled"})

ALL_TYPES = frozenset(
    {"init", "init_branch", "step", "wait", "resume", "finish_branch", "finish", "error", "cancelled"}
)

# What may follow what: `init` comes first and only once, nothing follows a terminal transition, and
# anything else may follow a non-terminal one (parallel branches and map items interleave freely).
# (The status after each batch is decided by the workflow, which knows whether a wait is still open.)
ALLOWED_NEXT: dict[str | None, frozenset[str]] = {
    None: frozenset({"init"}),
    **{kind: frozenset() if kind in TERMINAL_TYPES else ALL_TYPES - {"init"} for kind in ALL_TYPES},
}


class InvalidTransition(Exception):
    """A transition that may not follow the previous one (e.g. anything after `finish`)."""


def check_sequence(previous: str | None, types: list[str]) -> None:
    """Raise InvalidTransition unless `types` may follow a transition of type `previous`."""
    for kind in types:
        if kind not in ALLOWED_NEXT.get(previous, frozenset()):
            raise InvalidTransition(f"a {kind!r} transition cannot follow {previous or 'nothing'!r}")
        previous = kind


class PositionRow(TypedDict):
    """A Position as a transition row stores it (`current`, `next`)."""

    workflow: str
    step: int
    scope_id: str


@dataclass
class Position:
    """Where in a task a transition happened: a named workflow (or a nested path), a step, a run's scope."""

    workflow: str
    step: int
    scope_id: str

    def to_dict(self) -> PositionRow:
        return {"workflow": self.workflow, "step": self.step, "scope_id": self.scope_id}


class TransitionRow(TypedDict):
    """One transition as it travels to the writer: a dict, not a dataclass, because batches of hundreds
    cross Temporal and building an object per row on arrival costs more than the row's write (see
    contracts/temporal.py). `output` is already JSON text (measured once, stored as it is)."""

    id: str
    seq: int
    type: str
    output: str
    current: PositionRow
    next: PositionRow | None
    step_label: str | None
    metadata: dict[str, Any]
    created_at: str  # ISO 8601, from workflow.now()


@dataclass
class TransitionBatch:
    """write_transitions' and mark_failed's input: transitions to append in one write, with the execution's
    status after them."""

    execution_id: str
    developer_id: str
    transitions: list[TransitionRow]
    status: str
    output: Any = None
    error: str | None = None
