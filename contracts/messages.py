"""A chat message in OpenAI's chat format, the one provider-neutral shape Mint's model calls use: what a
prompt step or a chat sends (contracts/calls.py's ModelRequest), what a model answers, what a session's
history holds. TypedDicts: a message travels as the JSON object it is (Temporal payloads, the store, the
providers' SDKs), holding only the keys that were set."""

from __future__ import annotations

from typing import Required, TypedDict


class FunctionCall(TypedDict):
    """The function a tool call names, and its arguments: a JSON object, encoded as a string."""

    name: str
    arguments: str


class ToolCall(TypedDict):
    """A call the model made: `type` is `function` (a built-in tool's call is named as its tool)."""

    id: str
    type: str
    function: FunctionCall


class ImageUrl(TypedDict, total=False):
    url: Required[str]
    detail: str


class ContentPart(TypedDict, total=False):
    """One part of a message's content: `text` (with `text`) or `image_url` (with `image_url`)."""

    type: Required[str]
    text: str
    image_url: ImageUrl


class Message(TypedDict, total=False):
    """One message: a `tool` message answers the call `tool_call_id` names; an assistant's may carry
    `tool_calls` and no content."""

    role: Required[str]
    content: str | list[ContentPart] | None
    name: str | None
    tool_calls: list[ToolCall] | None
    tool_call_id: str


class Usage(TypedDict, total=False):
    """A model call's tokens."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class Choice(TypedDict, total=False):
    index: int
    message: Required[Message]
    finish_reason: str | None


class Completion(TypedDict, total=False):
    """A model's answer, as an OpenAI chat completion (Anthropic's are translated into one)."""

    id: str | None
    object: str
    created: int
    model: str | None
    choices: Required[list[Choice]]
    usage: Usage
