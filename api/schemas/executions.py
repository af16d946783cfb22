"""Executions and their transitions."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from api.schemas.common import RequestBody, ToolMetadata
from contracts.json import JsonObject
from contracts.webhooks import CallbackUrl


class ExecutionCreate(RequestBody):
    input: Any = Field(default_factory=dict, json_schema_extra={"not": {"type": "null"}})
    metadata: ToolMetadata | None = None
    # Where Mint POSTs the execution's statuses (docs/webhooks.md); the task's callback_url when not given.
    callback_url: CallbackUrl | None = None
    # The SDK's create params include these server-owned fields; they are accepted and ignored.
    output: Any = None
    error: str | None = None
    transition_count: int | None = None

    @field_validator("input")
    @classmethod
    def _not_null(cls, value: Any) -> Any:
        if value is None:
            raise ValueError("must not be null: send {} to a task that takes no input")
        return value


class ExecutionChange(RequestBody):
    status: Literal["running", "cancelled"]
    input: Any = None
    reason: str | None = None
    # Which open wait a resume answers (an id from the execution's `waits`); without it, the oldest.
    wait_id: str | None = Field(default=None, max_length=64)


class ExecutionRestart(RequestBody):
    """POST /executions/{id}/restart: run again from the step of `from_transition`, keeping what came
    before; `input`, when given, is that step's input (`_`) instead of the original's."""

    from_transition: str
    input: Any = None


class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    cost: float


class Wait(BaseModel):
    """An open wait: a `wait_for_input` step (`info` and `schema` as its step says), or a prompt's function
    tool call (`info` is the call). `id` is its `wait` transition's id; answer it with PUT and `wait_id`."""

    id: str
    step: str  # the step's label, else its place (`main[0]`)
    info: Any = None
    schema_: JsonObject | None = Field(default=None, alias="schema")
    opened_at: datetime


class Execution(BaseModel):
    id: str
    task_id: str
    task_version: int
    status: str
    input: Any
    output: Any = None
    error: str | None = None
    metadata: dict[str, object] = {}
    transition_count: int = 0
    usage: Usage | None = None  # the model usage its calls summed
    restarted_from: str | None = None  # the execution this one restarted (POST /executions/{id}/restart)
    # Its open waits, oldest first, on GET /executions/{id} and PUT (null where executions are listed).
    waits: list[Wait] | None = None
    created_at: datetime
    updated_at: datetime


class ExecutionListed(Execution):
    """An execution in the developer-wide list (GET /executions), with its task's name."""

    task_name: str


class Timer(BaseModel):
    """An open timer of an execution's workflow: a `sleep`, or the time limit of a `wait_for_input`."""

    started_at: datetime
    fires_at: datetime
    seconds: float


class Position(BaseModel):
    workflow: str
    step: int
    scope_id: str


class Transition(BaseModel):
    id: str
    execution_id: str
    type: str
    output: Any = None
    current: Position
    next: Position | None = None
    step_label: str | None = None
    metadata: dict[str, object] = {}
    created_at: datetime
    updated_at: datetime


class TraceItem(BaseModel):
    """One event of an execution's trace (infra/telemetry/traces.py lists the types and their data)."""

    type: Literal[
        "run_start",
        "run_end",
        "step_start",
        "step_end",
        "llm_call_start",
        "llm_call_end",
        "tool_call_start",
        "tool_call_end",
        "handoff",
        "guardrail",
    ]
    run_id: str  # the workflow run it happened in: `main`, a yielded workflow, a fan-out chunk
    at: datetime
    data: dict[str, object] = {}


class Trace(BaseModel):
    """`GET /executions/{id}/trace`: one trace id for the whole execution, its items in recorded order."""

    trace_id: str
    items: list[TraceItem]
