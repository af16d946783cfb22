"""Agents, their tools and their tasks."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationInfo, field_validator

from api.schemas.common import Name, ProblemOut, RequestBody, ToolMetadata
from contracts.json import JsonObject
from services.agents import AgentChange
from services.chat.context import DEFAULT_SYSTEM_TEMPLATE
from workflows.language import Guardrails

MAX_HANDOFFS = 20  # transfer tools offered at once: more would crowd out the agent's own tools


class AgentCreate(RequestBody):
    name: Name
    about: str | None = None
    model: str | None = None
    instructions: str | list[str] | None = None
    default_settings: JsonObject | None = None
    default_system_template: str | None = None
    canonical_name: str | None = None
    project: str | None = None
    metadata: ToolMetadata | None = None
    # The agents this one may hand a conversation to (ids of the developer's own agents).
    handoffs: Annotated[list[str], Field(max_length=MAX_HANDOFFS)] | None = None
    guardrails: Guardrails | None = None  # run on executions' input and output, and in chats

    def change(self, replace: bool = False) -> AgentChange:
        """What the body changes: the keys it gives, or (`replace`) every key, unset ones at their defaults."""
        change = _AGENT_CHANGE.validate_python(
            self.model_dump(exclude_unset=not replace, exclude={"guardrails"})
        )
        if replace or "guardrails" in self.model_fields_set:
            change["guardrails"] = self.guardrails
        return change


_AGENT_CHANGE = TypeAdapter(AgentChange)


class AgentPatch(AgentCreate):
    name: Name | None = None  # type: ignore[assignment]


class Agent(BaseModel):
    """An agent as Julep answers it: where none was given, `model` is "" (Mint then calls its default model),
    `instructions` a list (empty), `default_settings` {} and `default_system_template` the template chats
    use (services/chat/context.py)."""

    id: str
    name: str
    about: str | None = None
    model: str = ""
    instructions: list[str] = []
    default_settings: JsonObject = {}
    default_system_template: str = DEFAULT_SYSTEM_TEMPLATE
    canonical_name: str | None = None
    project: str | None = None
    metadata: JsonObject = {}
    handoffs: list[str] = []
    guardrails: JsonObject | None = None
    created_at: datetime
    updated_at: datetime

    @field_validator("model", "default_settings", "default_system_template", mode="before")
    @classmethod
    def _julep_default(cls, value: object, info: ValidationInfo) -> object:
        return cls.model_fields[info.field_name or ""].default if value is None else value

    @field_validator("instructions", mode="before")
    @classmethod
    def _as_list(cls, value: object) -> object:
        return [] if value is None else [value] if isinstance(value, str) else value


class Tool(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str
    name: str
    type: str
    description: str | None = None
    created_at: datetime
    updated_at: datetime
    warnings: list[ProblemOut] | None = Field(
        default=None,
        description="In the answer to a create or update only: each key ignored as Julep v1 ignored it, with its path.",
    )


class Task(BaseModel):
    """A task as Julep answers it (steps typed), plus server fields; named workflows besides `main` appear as
    extra keys. The answer to a create or update asked with `?warnings=true` also has `warnings`: how each
    string that could be read either way was read (Python or text), and each key ignored as Julep v1 ignored
    it, with its path; they are always in the answer's `Warning` header."""

    model_config = ConfigDict(extra="allow")
    id: str
    agent_id: str
    name: str
    description: str = ""
    main: list[object]
    input_schema: JsonObject | None = None
    tools: list[object] = []
    inherit_tools: bool = True
    metadata: JsonObject = {}
    version: int
    created_at: datetime
    updated_at: datetime
