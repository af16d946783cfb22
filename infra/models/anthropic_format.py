"""Anthropic's Messages API in OpenAI's chat format: Mint's requests and answers are OpenAI-shaped, so a
request for a Claude model is translated on the way out and its answer on the way back."""

from __future__ import annotations

import json
from typing import Required, TypedDict

from contracts.anthropic_tools import ANTHROPIC_TOOLS, ANTHROPIC_TOOLS_BETA
from contracts.calls import ModelRequest
from contracts.json import JsonObject, JsonValue
from contracts.messages import Completion, ContentPart, Message, ToolCall
from infra.models.completion import count_of
from infra.temporal import errors

ANTHROPIC_MAX_TOKENS = 4096  # Anthropic requires max_tokens; this is the default when a task sets none


class Block(TypedDict, total=False):
    """A content block of Anthropic's: `text`, `tool_use` (a call) or `tool_result` (its answer)."""

    type: Required[str]
    text: str
    id: str
    name: str
    input: JsonValue
    tool_use_id: str
    content: str


class AnthropicMessage(TypedDict):
    role: str
    content: str | list[Block]


class AnthropicArguments(TypedDict, total=False):
    """The arguments of `messages.create` Mint sets."""

    model: Required[str]
    messages: Required[list[AnthropicMessage]]
    max_tokens: Required[JsonValue]
    system: str
    output_config: JsonObject
    extra_body: JsonObject
    extra_headers: dict[str, str]
    stop_sequences: list[str]
    tools: list[JsonObject]
    tool_choice: JsonObject


def anthropic_arguments(model: str, request: ModelRequest) -> AnthropicArguments:
    """The arguments of `messages.create` for a provider-neutral request (see infra/models/client.py)."""
    settings = request.settings
    system, messages = to_anthropic(request.messages)
    response_format = request.response_format or {}
    spec = response_format.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, dict) else None
    if response_format.get("type") == "json_object":  # Anthropic has no JSON mode: ask in words
        system = "\n\n".join(filter(None, [system, "Answer with only a JSON object."]))
    arguments = AnthropicArguments(
        model=model, messages=messages, max_tokens=settings.get("max_tokens") or ANTHROPIC_MAX_TOKENS
    )
    if schema:
        arguments["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
    if system:
        arguments["system"] = system
    # The SDK no longer names sampling settings; they go as given, for the models that take them.
    sampling = {name: settings[name] for name in ("temperature", "top_p") if settings.get(name) is not None}
    if sampling:
        arguments["extra_body"] = sampling
    stop = settings.get("stop")
    if stop:
        arguments["stop_sequences"] = [stop] if isinstance(stop, str) else [str(s) for s in _list(stop)]
    if request.tools:
        arguments["tools"] = [_anthropic_tool(t) for t in request.tools]
        if any(t.get("type") in ANTHROPIC_TOOLS for t in request.tools):
            arguments["extra_headers"] = {"anthropic-beta": ANTHROPIC_TOOLS_BETA}
        if request.tool_choice is not None:
            arguments["tool_choice"] = _anthropic_tool_choice(request.tool_choice)
    return arguments


def tool_name(tool: JsonObject) -> str:
    """An offered tool's name (OpenAI's shape: `function.name`)."""
    function = tool.get("function")
    return str(function.get("name")) if isinstance(function, dict) else ""


def _anthropic_tool(tool: JsonObject) -> JsonObject:
    """One offered tool as Anthropic takes it: a function by its schema, a built-in one by its type (and the
    name Anthropic's models call it, whatever the tool's own: answers are named back, `named_back`)."""
    kind = tool.get("type")
    if isinstance(kind, str) and kind in ANTHROPIC_TOOLS:
        options = tool.get(kind)
        return {**(options if isinstance(options, dict) else {}), "type": kind, "name": ANTHROPIC_TOOLS[kind]}
    function = tool.get("function")
    function = function if isinstance(function, dict) else {}
    return {
        "name": function.get("name"),
        "description": function.get("description") or "",
        "input_schema": function.get("parameters") or {"type": "object", "properties": {}},
    }


def named_back(response: Completion, tools: list[JsonObject]) -> Completion:
    """An answer whose calls of built-in tools (named as Anthropic names them) carry the tools' own names."""
    own = {
        ANTHROPIC_TOOLS[kind]: tool_name(t)
        for t in tools
        if isinstance(kind := t.get("type"), str) and kind in ANTHROPIC_TOOLS
    }
    for choice in response["choices"] if own else []:
        for call in choice["message"].get("tool_calls") or []:
            call["function"]["name"] = own.get(call["function"]["name"], call["function"]["name"])
    return response


def to_anthropic(messages: list[Message]) -> tuple[str, list[AnthropicMessage]]:
    """OpenAI chat messages as Anthropic's (system text, messages): tool calls become tool_use blocks and
    tool results tool_result blocks in a user turn (consecutive results share one turn)."""
    system: list[str] = []
    converted: list[AnthropicMessage] = []
    for message in messages:
        role, content = message["role"], message.get("content")
        if role in ("system", "developer"):
            system.append(_text(content))
        elif role == "tool":
            block = Block(
                type="tool_result", tool_use_id=message.get("tool_call_id", ""), content=_text(content)
            )
            last = converted[-1]["content"] if converted and converted[-1]["role"] == "user" else None
            if isinstance(last, list) and all(b["type"] == "tool_result" for b in last):
                last.append(block)
            else:
                converted.append({"role": "user", "content": [block]})
        elif role == "assistant" and message.get("tool_calls"):
            blocks = [Block(type="text", text=_text(content))] if content else []
            blocks += [_tool_use(call) for call in message.get("tool_calls") or []]
            converted.append({"role": "assistant", "content": blocks})
        else:
            converted.append(
                {"role": "assistant" if role == "assistant" else "user", "content": _text(content)}
            )
    return "\n\n".join(s for s in system if s), converted


def _tool_use(call: ToolCall) -> Block:
    arguments: JsonValue = json.loads(call["function"].get("arguments") or "{}")
    return Block(type="tool_use", id=call["id"], name=call["function"]["name"], input=arguments)


def from_anthropic(message: object) -> Completion:
    """An Anthropic message (the JSON the Messages API answers) as an OpenAI chat completion; anything else is
    the provider's fault, retried like a 5xx."""
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(message, dict) or not isinstance(content, list):
        raise errors.transient("anthropic answered no message", "InvalidModelOutput")
    blocks = [b for b in content if isinstance(b, dict)]
    text = "".join(str(b.get("text") or "") for b in blocks if b.get("type") == "text")
    tool_calls = [
        ToolCall(
            id=str(b.get("id") or ""),
            type="function",
            function={"name": str(b.get("name") or ""), "arguments": json.dumps(b.get("input") or {})},
        )
        for b in blocks
        if b.get("type") == "tool_use"
    ]
    stop = message.get("stop_reason")
    finish = {"tool_use": "tool_calls", "max_tokens": "length"}.get(
        stop if isinstance(stop, str) else "", "stop"
    )
    usage = message.get("usage")
    prompt, completion = count_of(usage, "input_tokens"), count_of(usage, "output_tokens")
    model, answer_id = message.get("model"), message.get("id")
    return {
        "id": answer_id if isinstance(answer_id, str) else None,
        "object": "chat.completion",
        "model": model if isinstance(model, str) else None,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text or None, "tool_calls": tool_calls or None},
                "finish_reason": finish,
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def _anthropic_tool_choice(choice: str | JsonObject) -> JsonObject:
    function = choice.get("function") if isinstance(choice, dict) else None
    if isinstance(function, dict):
        return {"type": "tool", "name": function.get("name")}
    return {"type": {"required": "any", "none": "none"}.get(str(choice), "auto")}


def _list(value: JsonValue) -> list[JsonValue]:
    return value if isinstance(value, list) else [value]


def _text(content: str | list[ContentPart] | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    # OpenAI content parts: keep the text ones
    return "".join(p.get("text", "") for p in content if isinstance(p, dict))
