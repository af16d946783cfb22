"""Sessions; what a chat is asked is the chat service's (services/chat/request.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field, TypeAdapter
from pydantic.config import JsonDict

from api.schemas.common import RequestBody, ToolMetadata
from contracts.budgets import Budget
from contracts.json import JsonObject
from services.sessions import Participants, SessionChange


class SessionSettings(RequestBody):
    """Mint's settings for a session's chats: pass by reference (workflows/references.py)."""

    pass_by_reference: Annotated[bool, Field(strict=True)] | None = None
    reference_threshold: Annotated[int, Field(strict=True, ge=1)] | None = None  # characters


class RecallOptions(RequestBody):
    """How a chat recalls docs: Julep's DocSearch (vector, text or hybrid) with its defaults and bounds; a
    session without recall_options recalls nothing, as on Julep. `lang`, `include_embeddings` and
    `trigram_similarity_threshold` are taken as the search API takes them."""

    mode: Literal["vector", "text", "hybrid"] = "vector"
    limit: Annotated[int, Field(ge=1, le=50)] = 10
    lang: Annotated[str, Field(max_length=35)] = "en-US"
    metadata_filter: JsonObject = {}
    num_search_messages: Annotated[int, Field(ge=1, le=50)] = 4
    max_query_length: Annotated[int, Field(ge=100, le=10_000)] = 1000
    include_embeddings: bool = True
    confidence: Annotated[float, Field(ge=-1, le=1)] = 0.5
    alpha: Annotated[float, Field(ge=0, le=1)] = 0.5
    mmr_strength: Annotated[float, Field(ge=0, lt=1)] = 0.5
    trigram_similarity_threshold: Annotated[float, Field(ge=0, le=1)] | None = None
    k_multiplier: Annotated[int, Field(ge=0, le=127)] = 7


class SessionCreate(RequestBody):
    agent: str | None = None
    agents: Annotated[list[str], Field(max_length=20)] | None = None
    user: str | None = None
    users: Annotated[list[str], Field(max_length=20)] | None = None
    situation: Annotated[str, Field(max_length=100_000)] | None = None
    system_template: Annotated[str, Field(max_length=100_000)] | None = None
    token_budget: Annotated[int, Field(ge=1, le=10_000_000)] | None = None
    context_overflow: Literal["truncate", "adaptive"] | None = None
    render_templates: bool = True
    recall_options: RecallOptions | None = None
    auto_run_tools: bool = False
    forward_tool_calls: bool = False
    settings: SessionSettings | None = None
    metadata: ToolMetadata | None = None
    budget: Budget | None = None  # limits on the model calls of all its chats (contracts/budgets.py)

    def participants(self) -> Participants:
        """The agents and the users the body names, in `agent` and `agents`, `user` and `users`."""
        agents = ([self.agent] if self.agent else []) + (self.agents or [])
        users = ([self.user] if self.user else []) + (self.users or [])
        return Participants(agents, users)

    def change(self) -> SessionChange:
        """What the body changes besides the participants: the keys it gives."""
        return _SESSION_CHANGE.validate_python(
            self.model_dump(exclude_unset=True, exclude={"agent", "agents", "user", "users"})
        )


_SESSION_CHANGE = TypeAdapter(SessionChange)


def _no_default(schema: JsonDict) -> None:
    schema.pop("default", None)


class SessionPatch(SessionCreate):
    # Left out means unchanged; null is no value for these (their columns are NOT NULL).
    render_templates: bool = Field(None, json_schema_extra=_no_default)  # type: ignore[assignment]
    auto_run_tools: bool = Field(None, json_schema_extra=_no_default)  # type: ignore[assignment]
    forward_tool_calls: bool = Field(None, json_schema_extra=_no_default)  # type: ignore[assignment]


class Session(BaseModel):
    id: str
    agents: list[str]
    users: list[str] = []
    situation: str | None = None
    system_template: str | None = None
    token_budget: int | None = None
    context_overflow: str | None = None
    render_templates: bool = True
    recall_options: JsonObject | None = None
    auto_run_tools: bool = False
    forward_tool_calls: bool = False
    summary: str | None = None
    settings: JsonObject | None = None
    metadata: JsonObject = {}
    budget: Budget | None = None
    created_at: datetime
    updated_at: datetime
