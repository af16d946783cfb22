"""The records the Store answers for tasks, executions and transitions (infra/store/tasks.py,
infra/store/executions.py, infra/store/restarts.py), each read from its row with the column readers of
infra/store/rows.py."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from contracts.json import JsonObject, JsonValue
from infra.store.rows import (
    Row,
    integer,
    json_object,
    json_value,
    moment,
    number,
    optional_object,
    optional_text,
    text,
)


@dataclass(frozen=True)
class TaskVersion:
    """A version of a task: its document as validated, the dialect its expressions are in, and the agent that
    runs it. `created_at` and `updated_at` are the task's (its first version's, its latest version's)."""

    id: str
    version: int
    agent_id: str
    dialect: str
    document: JsonObject
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, row: Row, version: int | None = None) -> TaskVersion:
        """The task row (with its version's document); `version` names the version the document is of."""
        return cls(
            id=text(row, "id"),
            version=integer(row, "version") if version is None else version,
            agent_id=text(row, "agent_id"),
            dialect=text(row, "dialect"),
            document=json_object(row, "document"),
            created_at=moment(row, "created_at"),
            updated_at=moment(row, "updated_at"),
        )


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    cost: float


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
    task_name: str | None = None  # in the developer-wide list only

    def moved_to(self, status: str) -> Execution:
        return replace(self, status=status)

    @property
    def usage(self) -> Usage:
        """The model usage its calls summed, as one object."""
        total = self.prompt_tokens + self.completion_tokens
        return Usage(self.prompt_tokens, self.completion_tokens, total, self.cost)

    @classmethod
    def of(cls, row: Row) -> Execution:
        return cls(
            id=text(row, "id"),
            task_id=text(row, "task_id"),
            task_version=integer(row, "task_version"),
            status=text(row, "status"),
            input=json_value(row, "input"),
            metadata=json_object(row, "metadata"),
            created_at=moment(row, "created_at"),
            updated_at=moment(row, "updated_at"),
            output=json_value(row, "output"),
            error=optional_text(row, "error"),
            transition_count=integer(row, "transition_count", 0),
            prompt_tokens=integer(row, "prompt_tokens", 0),
            completion_tokens=integer(row, "completion_tokens", 0),
            cost=number(row, "cost", 0.0),
            restarted_from=optional_text(row, "restarted_from"),
            task_name=optional_text(row, "task_name"),
        )


@dataclass(frozen=True)
class Position:
    workflow: str
    step: int
    scope_id: str

    @classmethod
    def of(cls, value: JsonObject | None) -> Position | None:
        if value is None:
            return None
        return cls(text(value, "workflow"), integer(value, "step"), text(value, "scope_id"))


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
    metadata: JsonObject
    created_at: datetime

    @property
    def updated_at(self) -> datetime:
        """A transition is never changed once written."""
        return self.created_at

    @classmethod
    def of(cls, row: Row) -> Transition:
        current = Position.of(json_object(row, "current"))
        if current is None:
            raise TypeError("stored current is null")
        return cls(
            id=text(row, "id"),
            execution_id=text(row, "execution_id"),
            seq=integer(row, "seq"),
            type=text(row, "type"),
            output=json_value(row, "output"),
            current=current,
            next=Position.of(optional_object(row, "next")),
            step_label=optional_text(row, "step_label"),
            metadata=json_object(row, "metadata"),
            created_at=moment(row, "created_at"),
        )
