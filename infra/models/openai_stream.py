"""A streamed OpenAI chat completion, added up into the one completion it amounts to.

The chunks arrive as the JSON the server sent (the SDK's stream with `cast_to=object`): building the SDK's
typed model of every chunk cost a quarter of a streamed chat's CPU, and Mint reads five keys of each."""

from __future__ import annotations

from collections.abc import AsyncIterable, Awaitable, Callable

from contracts.json import JsonObject, JsonValue
from contracts.messages import Completion, Message, ToolCall, Usage
from infra.models.completion import count_of, stream_cut_off
from infra.temporal import errors

# Where a streamed answer's text goes, piece by piece (session chat with `stream: true`).
OnText = Callable[[str], Awaitable[None]]


async def joined(chunks: AsyncIterable[object], on_text: OnText) -> Completion:
    """An OpenAI chat-completion stream as the one completion it adds up to, its text passed on meanwhile.
    A chunk that is not a chat-completion chunk is the provider's fault, retried like a 5xx."""
    texts: list[str] = []
    calls: dict[int, ToolCall] = {}
    answer = Completion(id=None, object="chat.completion", created=0, model=None, choices=[], usage=Usage())
    finish = None
    async for chunk in chunks:
        if not isinstance(chunk, dict) or not isinstance(choices := chunk.get("choices") or [], list):
            raise _malformed()
        # Each chunk names the completion (the last one, usage only, may not).
        answer["id"] = _text(chunk, "id") or answer["id"]
        answer["model"] = _text(chunk, "model") or answer["model"]
        answer["created"] = count_of(chunk, "created") or answer["created"]
        if isinstance(used := chunk.get("usage"), dict):
            answer["usage"] = Usage(
                prompt_tokens=count_of(used, "prompt_tokens"),
                completion_tokens=count_of(used, "completion_tokens"),
                total_tokens=count_of(used, "total_tokens"),
            )
        for choice in choices:
            if not isinstance(choice, dict) or not isinstance(delta := choice.get("delta") or {}, dict):
                raise _malformed()
            if content := _text(delta, "content"):
                texts.append(content)
                await on_text(content)
            _add_calls(calls, delta.get("tool_calls"))
            finish = _text(choice, "finish_reason") or finish
    if finish is None:  # a stream cut off (a provider's every answer ends with its finish reason)
        raise stream_cut_off()
    message = Message(role="assistant", content="".join(texts) or None)
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    answer["choices"] = [{"index": 0, "message": message, "finish_reason": finish}]
    return answer


def _add_calls(calls: dict[int, ToolCall], parts: JsonValue) -> None:
    """A chunk's pieces of tool calls added to the calls so far (a call's pieces share its index)."""
    for part in parts if isinstance(parts, list) else []:
        if not isinstance(part, dict) or not isinstance(index := part.get("index"), int):
            raise _malformed()
        call = calls.setdefault(
            index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
        )
        call["id"] = _text(part, "id") or call["id"]
        function = part.get("function")
        if isinstance(function, dict):
            call["function"]["name"] += _text(function, "name")
            call["function"]["arguments"] += _text(function, "arguments")


def _text(value: JsonObject, key: str) -> str:
    found = value.get(key)
    if found is not None and not isinstance(found, str):
        raise _malformed()
    return found or ""


def _malformed() -> Exception:
    return errors.transient(
        "the model's stream sent a chunk that is not a chat completion's", "InvalidModelOutput"
    )
