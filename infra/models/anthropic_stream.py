"""A streamed Anthropic message, added up into the one message it amounts to.

The events arrive as the JSON the server sent (the SDK's stream with `cast_to=object`), as the OpenAI
stream's chunks do (infra/models/openai_stream.py): the SDK's message stream builds a typed snapshot of the
whole message at every event, where Mint reads the text, the tool calls, the stop reason and the usage."""

from __future__ import annotations

import json
from collections.abc import AsyncIterable

from contracts.json import JsonObject, JsonValue
from infra.models.completion import stream_cut_off
from infra.models.openai_stream import OnText
from infra.temporal import errors


async def joined_message(events: AsyncIterable[object], on_text: OnText) -> JsonObject:
    """An Anthropic message stream as the Messages API's message it adds up to, its text passed on
    meanwhile. An event that is not one of a message stream's is the provider's fault, retried like a 5xx."""
    message: JsonObject | None = None
    blocks: dict[int, JsonObject] = {}
    inputs: dict[int, list[str]] = {}  # a tool_use block's input, as its JSON arrives in pieces
    stopped = False
    async for event in events:
        kind = event.get("type") if isinstance(event, dict) else None
        if not isinstance(event, dict) or not isinstance(kind, str):
            raise _malformed()
        if kind == "message_start":
            message = _object(event, "message")
        elif kind == "content_block_start":
            blocks[_index(event)] = dict(_object(event, "content_block"))
        elif kind == "content_block_delta":
            await _add(blocks, inputs, _index(event), _object(event, "delta"), on_text)
        elif kind == "content_block_stop" and (pieces := inputs.pop(_index(event), None)) is not None:
            blocks[_index(event)]["input"] = _parsed("".join(pieces) or "{}")
        elif kind == "message_delta" and message is not None:
            message["stop_reason"] = _object(event, "delta").get("stop_reason")
            message["usage"] = {**_object(message, "usage"), **_object(event, "usage")}
        elif kind == "message_stop":
            stopped = True
    if message is None or not stopped:  # a stream cut off (every message stream ends with message_stop)
        raise stream_cut_off()
    message["content"] = [blocks[i] for i in sorted(blocks)]
    return message


async def _add(
    blocks: dict[int, JsonObject],
    inputs: dict[int, list[str]],
    index: int,
    delta: JsonObject,
    on_text: OnText,
) -> None:
    """A piece of the block at `index`: its text (passed on), or its input's JSON (kept until it ends).
    Thinking, signatures and citations are not what Mint reads of an answer."""
    block = blocks.get(index)
    if block is None:
        raise _malformed()
    if delta.get("type") == "text_delta":
        text = delta.get("text")
        if not isinstance(text, str):
            raise _malformed()
        block["text"] = str(block.get("text") or "") + text
        if text:
            await on_text(text)
    elif delta.get("type") == "input_json_delta":
        piece = delta.get("partial_json")
        if not isinstance(piece, str):
            raise _malformed()
        inputs.setdefault(index, []).append(piece)


def _object(value: JsonObject, key: str) -> JsonObject:
    found = value.get(key) or {}
    if not isinstance(found, dict):
        raise _malformed()
    return found


def _index(event: JsonObject) -> int:
    index = event.get("index")
    if not isinstance(index, int):
        raise _malformed()
    return index


def _parsed(text: str) -> JsonValue:
    try:
        value: JsonValue = json.loads(text)
    except ValueError:
        raise _malformed() from None
    return value


def _malformed() -> Exception:
    return errors.transient("the model's stream sent an event that is not a message's", "InvalidModelOutput")
