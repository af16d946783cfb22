"""Executions and their transitions as the store answers them (infra/store/execution_records.py reads them
from their rows)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from contracts.json import JsonObject, JsonValue


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    cost: float


@dataclass(frozen=True)
class OpenWait:
    """A wait of an execution that no resume answered yet: a `wait_for_input` step, or a function tool call
    the client runs. `id` is its `wait` transition's id, `step` its step's label (else its place, `main[0]`),
    `info` what it asks (the tool call, for a tool call), `schema` what an answer must satisfy."""

    id: str
    seq: int
    step: str
    info: JsonValue
    schema: JsonObject | None
    opened_at: datetime

    def to_json(self) -> JsonObject:
        """As the API and webhooks show it: `{"id", "step", "info", "schema", "opened_at"}`."""
        opened = self.opened_at.isoformat()
        return {
            "id": self.id,
            "step": self.step,
            "info": self.info,
            "schema": self.schema,
            "opened_at": opened,
        }


@dataclass(frozen=True)
class Execution:
    id: str
    task_id: str
    task_version: int
    status: str
    input: JsonValue
    metadata: JsonObject
    created_at: datetime
    updated_at: datetime
    output: JsonValue = None
    error: str | None = None
    transition_count: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    restarted_from: str | None = None
    callback_url: str | None = None  # where it reports its statuses (docs/webhooks.md)
    task_name: str | None = None  # in the developer-wide list only
    waits: tuple[OpenWait, ...] | None = None  # read for one execution only (services/executions/reads.py)

    def moved_to(self, status: str) -> Execution:
        return replace(self, status=status)

    @property
    def usage(self) -> Usage:
        """The model usage its calls summed, as one object."""
        total = self.prompt_tokens + self.completion_tokens
        return Usage(self.prompt_tokens, self.completion_tokens, total, self.cost)


@dataclass(frozen=True)
class Position:
    """Where a transition ran: a named workflow (or a nested path), a step, a run's scope."""

    workflow: str
    step: int
    scope_id: str


@dataclass(frozen=True)
class Transition:
    id: str
    execution_id: str
    seq: int
    type: str
    output: JsonValue
    current: Position
    next: Position | None
    step_label: str | None
    metadata: JsonObject  # {} for none
    created_at: datetime

    @property
    def updated_at(self) -> datetime:
        """A transition is never changed once written."""
        return self.created_at


@dataclass(frozen=True)
class QuietExecution:
    """A live execution the reconciler claimed for a check (infra/temporal/reconciler.py)."""

    id: str
    developer_id: str
    status: str
    task_id: str | None = None
    # Where its webhooks go, the one that reports the end the reconciler writes among them.
    callback_url: str | None = None
