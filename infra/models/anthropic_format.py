"""Anthropic's Messages API in OpenAI's chat format: Mint's requests and answers are OpenAI-shaped, so a
request for a Claude model is translated on the way out and its answer on the way back."""

from __future__ import annotations

import json
from typing import Any

from contracts.anthropic_tools import ANTHROPIC_TOOLS, ANTHROPIC_TOOLS_BETA

ANTHROPIC_MAX_TOKENS = 4096  # Anthropic requires max_tokens; this is the default when a task sets none


def anthropic_arguments(model: str, request: dict[str, Any]) -> dict[str, Any]:
    """The arguments of `messages.create` for a provider-neutral request (see infra/models/client.py)."""
    settings = request.get("settings") or {}
    system, messages = to_anthropic(request["messages"])
    response_format = request.get("response_format") or {}
    schema = (response_format.get("json_schema") or {}).get("schema")
    if response_format.get("type") == "json_object":  # Anthropic has no JSON mode: ask in words
        system = "\n\n".join(filter(None, [system, "Answer with only a JSON object."]))
    arguments: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "max_tokens": settings.get("max_tokens") or ANTHROPIC_MAX_TOKENS,
    }
    if schema:
        arguments["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
    if system:
        arguments["system"] = system
    # The SDK no longer names sampling settings; they go as given, for the models that take them.
    sampling = {name: settings[name] for name in ("temperature", "top_p") if settings.get(name) is not None}
    if sampling:
        arguments["extra_body"] = sampling
    if settings.get("stop"):
        stop = settings["stop"]
        arguments["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    if request.get("tools"):
        arguments["tools"] = [_anthropic_tool(t) for t in request["tools"]]
        if any(t.get("type") in ANTHROPIC_TOOLS for t in request["tools"]):
            arguments["extra_headers"] = {"anthropic-beta": ANTHROPIC_TOOLS_BETA}
        if request.get("tool_choice") is not None:
            arguments["tool_choice"] = _anthropic_tool_choice(request["tool_choice"])
    return arguments


def _anthropic_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """One offered tool as Anthropic takes it: a function by its schema, a built-in one by its type (and the
    name Anthropic's models call it, whatever the tool's own: answers are named back, `named_back`)."""
    kind = tool.get("type")
    if kind in ANTHROPIC_TOOLS:
        return {**(tool.get(kind) or {}), "type": kind, "name": ANTHROPIC_TOOLS[kind]}
    return {
        "name": tool["function"]["name"],
        "description": tool["function"].get("description") or "",
        "input_schema": tool["function"].get("parameters") or {"type": "object", "properties": {}},
    }


def named_back(response: dict[str, Any], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """An answer whose calls of built-in tools (named as Anthropic names them) carry the tools' own names."""
    own = {
        ANTHROPIC_TOOLS[t["type"]]: t["function"]["name"] for t in tools if t.get("type") in ANTHROPIC_TOOLS
    }
    for choice in response["choices"] if own else []:
        for call in choice["message"].get("tool_calls") or []:
            call["function"]["name"] = own.get(call["function"]["name"], call["function"]["name"])
    return response


def to_anthropic(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """OpenAI chat messages as Anthropic's (system text, messages): tool calls become tool_use blocks and
    tool results tool_result blocks in a user turn (consecutive results share one turn)."""
    system: list[str] = []
    converted: list[dict[str, Any]] = []
    for message in messages:
        role, content = message["role"], message.get("content")
        if role in ("system", "developer"):
            system.append(_text(content))
        elif role == "tool":
            block = {"type": "tool_result", "tool_use_id": message["tool_call_id"], "content": _text(content)}
            if converted and converted[-1]["role"] == "user" and _is_tool_results(converted[-1]):
                converted[-1]["content"].append(block)
            else:
                converted.append({"role": "user", "content": [block]})
        elif role == "assistant" and message.get("tool_calls"):
            blocks: list[dict[str, Any]] = [{"type": "text", "text": _text(content)}] if content else []
            for call in message["tool_calls"]:
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call["id"],
                        "name": call["function"]["name"],
                        "input": json.loads(call["function"].get("arguments") or "{}"),
                    }
                )
            converted.append({"role": "assistant", "content": blocks})
        else:
            converted.append(
                {"role": "assistant" if role == "assistant" else "user", "content": _text(content)}
            )
    return "\n\n".join(s for s in system if s), converted


def from_anthropic(message: dict[str, Any]) -> dict[str, Any]:
    """An Anthropic message as an OpenAI chat completion."""
    text = "".join(b.get("text", "") for b in message.get("content", []) if b.get("type") == "text")
    tool_calls = [
        {
            "id": b["id"],
            "type": "function",
            "function": {"name": b["name"], "arguments": json.dumps(b.get("input") or {})},
        }
        for b in message.get("content", [])
        if b.get("type") == "tool_use"
    ]
    stop = message.get("stop_reason")
    finish = {"tool_use": "tool_calls", "max_tokens": "length"}.get(stop or "", "stop")
    usage = message.get("usage") or {}
    prompt, completion = usage.get("input_tokens") or 0, usage.get("output_tokens") or 0
    return {
        "id": message.get("id"),
        "object": "chat.completion",
        "model": message.get("model"),
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


def _anthropic_tool_choice(choice: Any) -> dict[str, Any]:
    if isinstance(choice, dict) and choice.get("function"):
        return {"type": "tool", "name": choice["function"]["name"]}
    return {"type": {"required": "any", "none": "none"}.get(str(choice), "auto")}


def _is_tool_results(message: dict[str, Any]) -> bool:
    content = message["content"]
    return isinstance(content, list) and all(b.get("type") == "tool_result" for b in content)


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts: keep the text ones
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return json.dumps(content)
