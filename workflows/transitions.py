"""Transition types, the statuses they lead to, and the one place that decides which sequences are allowed."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

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


@dataclass
class Position:
    workflow: str
    step: int
    scope_id: str

    def to_dict(self) -> dict[str, Any]:
        return {"workflow": self.workflow, "step": self.step, "scope_id": self.scope_id}


@dataclass
class TransitionBatch:
    """Transitions to append in one write, with the execution's status after them."""

    execution_id: str
    developer_id: str
    transitions: list[dict[str, Any]]
    status: str
    output: Any = None
    error: str | None = None


def plain(value: Any) -> Any:
    """A dataclass as a dict, recursing only into dataclasses: Temporal's JSON converter turns a dataclass
    into a dict with `dataclasses.asdict`, which deep-copies every value inside (whole transition batches,
    map items); handing it a dict skips that copy. The receiving side still gets the dataclass back."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return value
