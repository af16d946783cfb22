"""A streamed OpenAI chat completion, added up into the one completion it amounts to."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING

import httpx

from contracts.messages import Completion, Message, ToolCall, Usage
from infra.temporal import errors

if TYPE_CHECKING:  # the SDK is imported where a call needs it (infra/models/sdks.py)
    from openai import AsyncStream
    from openai.types.chat import ChatCompletionChunk

# Where a streamed answer's text goes, piece by piece (session chat with `stream: true`).
OnText = Callable[[str], Awaitable[None]]


async def joined(stream: AsyncStream[ChatCompletionChunk], on_text: OnText) -> Completion:
    """An OpenAI chat-completion stream as the one completion it adds up to, its text passed on meanwhile."""
    texts: list[str] = []
    calls: dict[int, ToolCall] = {}
    answer = Completion(object="chat.completion", choices=[], usage=Usage())
    finish = None
    async for chunk in _chunks(stream):
        answer["id"], answer["created"], answer["model"] = chunk.id, chunk.created, chunk.model
        if chunk.usage is not None:
            used = chunk.usage
            answer["usage"] = Usage(
                prompt_tokens=used.prompt_tokens,
                completion_tokens=used.completion_tokens,
                total_tokens=used.total_tokens,
            )
        for choice in chunk.choices:
            if choice.delta.content:
                texts.append(choice.delta.content)
                await on_text(choice.delta.content)
            for part in choice.delta.tool_calls or []:
                call = calls.setdefault(
                    part.index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
                )
                call["id"] = part.id or call["id"]
                call["function"]["name"] += (part.function.name if part.function else None) or ""
                call["function"]["arguments"] += (part.function.arguments if part.function else None) or ""
            finish = choice.finish_reason or finish
    if finish is None:  # a stream cut off (a provider's every answer ends with its finish reason)
        raise errors.transient("the model's stream ended before its answer did", "ModelUnavailable")
    message = Message(role="assistant", content="".join(texts) or None)
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    answer["choices"] = [{"index": 0, "message": message, "finish_reason": finish}]
    return answer


async def _chunks(stream: AsyncStream[ChatCompletionChunk]) -> AsyncIterator[ChatCompletionChunk]:
    """The stream's chunks; a connection lost mid-answer is the provider's failure, retried like a 5xx."""
    try:
        async for chunk in stream:
            yield chunk
    except httpx.TransportError as exc:
        raise errors.transient(
            f"the model's stream broke off: {type(exc).__name__}", "ModelUnavailable"
        ) from None
