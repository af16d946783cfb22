"""What a chat is asked: its messages and options (the body of `POST /sessions/{id}/chat` and `/render`,
which api/schemas/ re-exports). Here, not in api/, because the chat service reads it, and passes models'
answers through ChatMessage to the session's next agent."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from contracts import messages
from contracts.json import JsonObject
from contracts.messages import Message
from workflows.language import ToolDef


class TextPart(BaseModel):
    type: Literal["text"]
    text: str

    def part(self) -> messages.ContentPart:
        return {"type": self.type, "text": self.text}


class ImageUrl(BaseModel):
    url: Annotated[str, Field(min_length=1)]
    detail: Literal["low", "high", "auto"] | None = None


class ImagePart(BaseModel):
    type: Literal["image_url"]
    image_url: ImageUrl

    def part(self) -> messages.ContentPart:
        image = messages.ImageUrl(url=self.image_url.url)
        if self.image_url.detail is not None:
            image["detail"] = self.image_url.detail
        return {"type": self.type, "image_url": image}


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

    def call(self) -> messages.ToolCall:
        return {
            "id": self.id,
            "type": self.type,
            "function": {"name": self.function.name, "arguments": self.function.arguments},
        }


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

    def message(self) -> Message:
        """The message as a model call takes it: the fields given (as `model_dump(exclude_none=True)`)."""
        message = Message(role=self.role)
        if self.content is not None:
            content = self.content
            message["content"] = content if isinstance(content, str) else [p.part() for p in content]
        if self.name is not None:
            message["name"] = self.name
        if self.tool_calls is not None:
            message["tool_calls"] = [call.call() for call in self.tool_calls]
        if self.tool_call_id is not None:
            message["tool_call_id"] = self.tool_call_id
        return message

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
    # Julep's other sampling settings: logit_bias for OpenAI's models, the rest for OpenAI-compatible servers
    # that take them (vLLM and the like: infra/models/client.py); a provider that cannot is told nothing, and
    # the answer's Warning header says so.
    logit_bias: dict[str, float] | None = None
    min_p: Annotated[float, Field(ge=0, le=1)] | None = None
    repetition_penalty: Annotated[float, Field(ge=0, le=2)] | None = None
    length_penalty: Annotated[float, Field(ge=0, le=2)] | None = None
    tool_choice: Literal["auto", "none", "required"] | JsonObject | None = None
    # Julep v1 accepted `remember` and did nothing with it ("will be enabled in a future release"): so here.
    remember: bool = False
    recall_tools: bool = True  # whether the history sent keeps its tool calls and results
    response_format: JsonObject | None = None
    metadata: JsonObject | None = None
    tools: Annotated[list[ToolDef], Field(max_length=128)] | None = None  # added to the agent's
    auto_run_tools: bool | None = None  # default: the session's
