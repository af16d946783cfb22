"""Request and response bodies of the HTTP API (Julep v1 shapes, so the `julep` SDK works unchanged)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from workflows.language import ToolDef

Name = Annotated[str, Field(min_length=1, max_length=255)]
Metadata = dict[str, Any]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProblemOut(BaseModel):
    path: str
    message: str


class ErrorOut(BaseModel):
    """Every error answer (api/errors.py): a message a person can act on and, for bad input, where."""

    error: str
    detail: str
    problems: list[ProblemOut] = []


class AgentCreate(_Request):
    name: Name
    about: str | None = None
    model: str | None = None
    instructions: str | list[str] | None = None
    default_settings: dict[str, Any] | None = None
    default_system_template: str | None = None
    canonical_name: str | None = None
    project: str | None = None
    metadata: Metadata | None = None


class AgentPatch(AgentCreate):
    name: Name | None = None  # type: ignore[assignment]


class Agent(BaseModel):
    id: str
    name: str
    about: str | None = None
    model: str | None = None
    instructions: str | list[str] | None = None
    default_settings: dict[str, Any] | None = None
    default_system_template: str | None = None
    canonical_name: str | None = None
    project: str | None = None
    metadata: Metadata = {}
    created_at: datetime
    updated_at: datetime


class UserCreate(_Request):
    name: str | None = None
    about: str | None = None
    project: str | None = None
    metadata: Metadata | None = None


class User(BaseModel):
    id: str
    name: str | None = None
    about: str | None = None
    project: str | None = None
    metadata: Metadata = {}
    created_at: datetime
    updated_at: datetime


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
    """A task as written, plus server fields; named workflows besides `main` appear as extra keys."""

    model_config = ConfigDict(extra="allow")
    id: str
    agent_id: str
    name: str
    description: str = ""
    main: list[Any]
    input_schema: dict[str, Any] | None = None
    tools: list[Any] = []
    inherit_tools: bool = True
    metadata: Metadata = {}
    version: int
    created_at: datetime
    updated_at: datetime
    warnings: list[ProblemOut] | None = Field(
        default=None,
        description=(
            "In the answer to a create or update only: how each string that could be read either way was "
            "read (Python or text), and each key ignored as Julep v1 ignored it, with its path."
        ),
    )


class ExecutionCreate(_Request):
    input: Any = Field(default_factory=dict, json_schema_extra={"not": {"type": "null"}})
    metadata: Metadata | None = None
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


class ExecutionChange(_Request):
    status: Literal["running", "cancelled"]
    input: Any = None
    reason: str | None = None


class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    cost: float


class Execution(BaseModel):
    id: str
    task_id: str
    task_version: int
    status: str
    input: Any
    output: Any = None
    error: str | None = None
    metadata: Metadata = {}
    transition_count: int = 0
    usage: Usage | None = None
    created_at: datetime
    updated_at: datetime

    @model_validator(mode="before")
    @classmethod
    def _collect_usage(cls, row: Any) -> Any:
        """The execution row's summed model usage, as one object."""
        if isinstance(row, Mapping) and "prompt_tokens" in row:
            prompt, completion = row["prompt_tokens"], row["completion_tokens"]
            usage = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
            return {**row, "usage": {**usage, "cost": row["cost"]}}
        return row


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
    metadata: Metadata = {}
    created_at: datetime
    updated_at: datetime


class ResourceDeleted(BaseModel):
    id: str
    deleted_at: datetime
    jobs: list[str] = []


def event_stream(data_schema: dict[str, Any], description: str) -> dict[int | str, dict[str, Any]]:
    """openapi.json's 200 of an SSE route: each event's `data` is JSON matching `data_schema` (written as
    FastAPI writes its own SSE routes: Open API 3.2's `itemSchema`, one event)."""
    event = {
        "type": "object",
        "required": ["data"],
        "properties": {
            "data": {"type": "string", "contentMediaType": "application/json", "contentSchema": data_schema},
            "event": {"type": "string"},
            "id": {"type": "string"},
            "retry": {"type": "integer", "minimum": 0},
        },
    }
    return {200: {"description": description, "content": {"text/event-stream": {"itemSchema": event}}}}


T = TypeVar("T")


class ItemList(BaseModel, Generic[T]):
    items: list[T]


# Docs ----------------------------------------------------------------------------------------------------


class DocCreate(BaseModel):
    model_config = ConfigDict(extra="ignore")  # Julep's SDK may send fields Mint has no use for
    title: Annotated[str, Field(min_length=1, max_length=800)]
    content: (
        Annotated[str, Field(max_length=1_000_000)]
        | Annotated[list[str], Field(min_length=1, max_length=10_000)]
    )
    metadata: Metadata | None = None
    embed_instruction: str | None = None


class DocsImport(_Request):
    docs: Annotated[list[DocCreate], Field(min_length=1, max_length=1000)]


class Doc(BaseModel):
    id: str
    title: str
    content: str | list[str]
    metadata: Metadata = {}
    embed_instruction: str | None = None
    embedding_model: str | None = None
    embedding_dimensions: int | None = None
    embeddings: list[list[float]] | None = None
    status: str
    error: str | None = None
    created_at: datetime
    updated_at: datetime


class DocsDelete(BaseModel):
    model_config = ConfigDict(extra="ignore")
    metadata_filter: Metadata | None = None
    delete_all: bool = False


class DocSearch(BaseModel):
    """Julep's text, vector and hybrid search bodies in one; `mode` lets Mint embed `text` itself."""

    model_config = ConfigDict(extra="ignore")
    text: Annotated[str, Field(max_length=10_000)] | None = None
    vector: list[float] | None = None
    mode: Literal["text", "vector", "hybrid"] | None = None
    limit: Annotated[int, Field(ge=1, le=100)] = 10
    metadata_filter: Metadata | None = None
    confidence: Annotated[float, Field(ge=-1, le=1)] = 0.0
    alpha: Annotated[float, Field(ge=0, le=1)] = 0.5
    fusion: Literal["rrf", "dbsf"] = "rrf"
    mmr_strength: Annotated[float, Field(ge=0, lt=1)] = 0.0
    k_multiplier: Annotated[int, Field(ge=1, le=10)] = 4
    include_embeddings: bool = False


class Embed(BaseModel):
    model_config = ConfigDict(extra="ignore")
    text: (
        Annotated[str, Field(max_length=100_000)] | Annotated[list[str], Field(min_length=1, max_length=256)]
    )
    embed_instruction: str | None = None


# Sessions --------------------------------------------------------------------------------------------------


class SessionCreate(BaseModel):
    model_config = ConfigDict(extra="ignore")
    agent: str | None = None
    agents: Annotated[list[str], Field(max_length=20)] | None = None
    user: str | None = None
    users: Annotated[list[str], Field(max_length=20)] | None = None
    situation: Annotated[str, Field(max_length=100_000)] | None = None
    system_template: Annotated[str, Field(max_length=100_000)] | None = None
    token_budget: Annotated[int, Field(ge=1, le=10_000_000)] | None = None
    context_overflow: Literal["truncate", "adaptive"] | None = None
    render_templates: bool = True
    recall_options: dict[str, Any] | None = None
    auto_run_tools: bool = False
    forward_tool_calls: bool = False
    metadata: Metadata | None = None


def _no_default(schema: dict[str, Any]) -> None:
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
    recall_options: dict[str, Any] | None = None
    auto_run_tools: bool = False
    forward_tool_calls: bool = False
    summary: str | None = None
    metadata: Metadata = {}
    created_at: datetime
    updated_at: datetime


class TextPart(BaseModel):
    type: Literal["text"]
    text: str


class ImageUrl(BaseModel):
    url: Annotated[str, Field(min_length=1)]
    detail: Literal["low", "high", "auto"] | None = None


class ImagePart(BaseModel):
    type: Literal["image_url"]
    image_url: ImageUrl


ContentPart = Annotated[TextPart | ImagePart, Field(discriminator="type")]


class FunctionCall(BaseModel):
    name: Annotated[str, Field(min_length=1, max_length=255)]
    arguments: str = "{}"

    @field_validator("arguments")
    @classmethod
    def _json_object(cls, value: str) -> str:
        # Both providers need the arguments as an object (Anthropic's tool_use `input` is one).
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            raise ValueError("must be a JSON object, encoded as a string")
        return value


class ToolCall(BaseModel):
    """A call the model made, as the client sends it back (OpenAI's shape)."""

    model_config = ConfigDict(extra="ignore")
    id: Annotated[str, Field(min_length=1, max_length=255)]
    type: Literal["function"] = "function"
    function: FunctionCall


_NOT_ASSISTANT = {"properties": {"role": {"not": {"const": "assistant"}}}}
# _fields_fit_the_role's rules, in openapi.json too.
_ROLE_RULES: list[Any] = [
    {
        "if": _NOT_ASSISTANT,
        "then": {"required": ["content"], "properties": {"content": {"not": {"type": "null"}}}},
    },
    {
        "if": _NOT_ASSISTANT,
        "then": {"properties": {"tool_calls": {"not": {"type": "array", "minItems": 1}}}},
    },
    {
        "if": {"properties": {"role": {"const": "tool"}}},
        "then": {"required": ["tool_call_id"], "properties": {"tool_call_id": {"type": "string"}}},
    },
]


class ChatMessage(BaseModel):
    """A message as the providers take it: checked here, so that a malformed one is a 422 naming its field
    rather than a provider's error (or a crash translating it for Anthropic)."""

    model_config = ConfigDict(extra="ignore", json_schema_extra={"allOf": _ROLE_RULES})
    role: Literal["user", "assistant", "system", "tool", "developer"]
    content: str | list[ContentPart] | None = None
    name: Annotated[str, Field(max_length=255)] | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: Annotated[str, Field(min_length=1, max_length=255)] | None = None

    @field_validator("content", mode="before")
    @classmethod
    def _strings_as_text_parts(cls, value: Any) -> Any:
        # Julep's SDK also allows a list of plain strings.
        if isinstance(value, list):
            return [{"type": "text", "text": part} if isinstance(part, str) else part for part in value]
        return value

    @model_validator(mode="after")
    def _fields_fit_the_role(self) -> ChatMessage:
        # (An assistant's may be empty: a model's answer, passed on to the next agent of a session, can be.)
        if self.content is None and self.role != "assistant":
            raise ValueError(f"a `{self.role}` message needs `content`")
        if self.role == "tool" and self.tool_call_id is None:
            raise ValueError("a `tool` message needs `tool_call_id` (the id of the call it answers)")
        if self.tool_calls and self.role != "assistant":
            raise ValueError(f"only `assistant` messages carry `tool_calls`, not `{self.role}` ones")
        return self


class Chat(BaseModel):
    model_config = ConfigDict(extra="ignore")
    messages: Annotated[list[ChatMessage], Field(min_length=1, max_length=1000)]
    agent: str | None = None
    recall: bool = True
    save: bool = True
    stream: bool = False
    model: str | None = None
    temperature: Annotated[float, Field(ge=0, le=2)] | None = None
    max_tokens: Annotated[int, Field(ge=1)] | None = None
    top_p: Annotated[float, Field(ge=0, le=1)] | None = None
    stop: list[str] | None = None
    seed: int | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    response_format: dict[str, Any] | None = None
    metadata: Metadata | None = None
    tools: Annotated[list[ToolDef], Field(max_length=128)] | None = None  # added to the agent's
    auto_run_tools: bool | None = None  # default: the session's


# Secrets ------------------------------------------------------------------------------------------------
SecretName = Annotated[
    str,
    Field(
        pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$",
        description="an identifier, so that tool specs can say `secrets.NAME`",
    ),
]


class SecretCreate(_Request):
    name: SecretName
    value: Annotated[str, Field(min_length=1, max_length=64 * 1024)]
    description: str | None = None
    metadata: Metadata | None = None


class Secret(BaseModel):
    """A secret as the API shows it: `value` is always a mask; the value itself is never returned."""

    id: str
    name: str
    value: str
    description: str | None = None
    metadata: Metadata = {}
    created_at: datetime
    updated_at: datetime
