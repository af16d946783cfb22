"""A streamed OpenAI chat completion, added up into the one completion it amounts to."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

# Where a streamed answer's text goes, piece by piece (session chat with `stream: true`).
OnText = Callable[[str], Awaitable[None]]


async def joined(stream: Any, on_text: OnText) -> dict[str, Any]:
    """An OpenAI chat-completion stream as the one completion it adds up to, its text passed on meanwhile."""
    texts: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    head: dict[str, Any] = {"object": "chat.completion", "usage": {}}
    finish = None
    async for chunk in stream:
        data = chunk.model_dump(mode="json", exclude_unset=True)
        head.update({k: data[k] for k in ("id", "created", "model") if k in data})
        head["usage"] = data.get("usage") or head["usage"]
        for choice in data.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                texts.append(delta["content"])
                await on_text(delta["content"])
            for part in delta.get("tool_calls") or []:
                call = calls.setdefault(
                    part["index"], {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
                )
                call["id"] = part.get("id") or call["id"]
                function = part.get("function") or {}
                call["function"]["name"] += function.get("name") or ""
                call["function"]["arguments"] += function.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return {**head, "choices": [{"index": 0, "message": message, "finish_reason": finish}]}
