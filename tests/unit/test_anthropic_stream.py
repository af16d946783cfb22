"""A streamed Anthropic message, read as the JSON events the server sent (infra/models/anthropic_stream.py),
adds up to the message it amounts to, and reads back as an OpenAI completion (anthropic_format.py)."""

import pytest
from temporalio.exceptions import ApplicationError

from infra.models.anthropic_format import from_anthropic
from infra.models.anthropic_stream import joined_message

START = {"type": "message_start", "message": {"id": "m1", "model": "claude", "usage": {"input_tokens": 9}}}
STOP = {"type": "message_stop"}


async def _joined(events: list[object]) -> tuple[dict, list[str]]:
    texts: list[str] = []

    async def on_text(text: str) -> None:
        texts.append(text)

    async def stream():
        for event in events:
            yield event

    return await joined_message(stream(), on_text), texts


def _block(index: int, block: dict) -> dict:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, delta: dict) -> dict:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def _end(index: int) -> dict:
    return {"type": "content_block_stop", "index": index}


def _finish(reason: str) -> dict:
    return {"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 4}}


async def test_text_is_passed_on_and_the_message_reads_as_a_completion():
    text = [_delta(0, {"type": "text_delta", "text": t}) for t in ("Hel", "", "lo")]
    message, texts = await _joined(
        [START, _block(0, {"type": "text", "text": ""}), *text, _end(0), _finish("end_turn"), STOP]
    )
    assert texts == ["Hel", "lo"]
    completion = from_anthropic(message)
    assert completion["choices"] == [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Hello", "tool_calls": None},
            "finish_reason": "stop",
        }
    ]
    assert completion["usage"] == {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}
    assert (completion["id"], completion["model"]) == ("m1", "claude")


async def test_a_tool_use_input_streamed_in_pieces_is_parsed_when_its_block_ends():
    use = {"type": "tool_use", "id": "t1", "name": "lookup", "input": {}}
    pieces = [_delta(1, {"type": "input_json_delta", "partial_json": p}) for p in ('{"q": ', '"x"}')]
    thinking = [
        _block(0, {"type": "thinking", "thinking": ""}),
        _delta(0, {"type": "thinking_delta", "thinking": "hm"}),
    ]
    events = [START, *thinking, _end(0), _block(1, use), *pieces, _end(1), _finish("tool_use"), STOP]
    message, texts = await _joined(events)
    assert texts == []
    choice = from_anthropic(message)["choices"][0]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] is None
    assert choice["message"]["tool_calls"] == [
        {"id": "t1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}
    ]


@pytest.mark.parametrize("events", [[], [START, _block(0, {"type": "text"})]], ids=["empty", "no stop"])
async def test_a_stream_that_ends_before_its_message_is_retried(events):
    with pytest.raises(ApplicationError, match="ended before its answer did") as raised:
        await _joined(events)
    assert raised.value.type == "ModelUnavailable" and not raised.value.non_retryable


@pytest.mark.parametrize(
    "event",
    [
        ["not", "an", "event"],
        {"type": "content_block_start", "index": "0", "content_block": {}},
        _delta(5, {"type": "text_delta", "text": "no such block"}),
        _delta(0, {"type": "text_delta", "text": 7}),
        _delta(0, {"type": "input_json_delta", "partial_json": None}),
    ],
    ids=["list", "index", "block", "text", "json piece"],
)
async def test_an_event_that_is_not_a_message_streams_is_retried(event):
    with pytest.raises(ApplicationError, match="not a message's") as raised:
        await _joined([START, _block(0, {"type": "text", "text": ""}), event, STOP])
    assert raised.value.type == "InvalidModelOutput" and not raised.value.non_retryable


async def test_a_tool_input_that_is_not_json_is_retried():
    use = _block(0, {"type": "tool_use", "id": "t", "name": "f", "input": {}})
    with pytest.raises(ApplicationError, match="not a message's"):
        await _joined(
            [START, use, _delta(0, {"type": "input_json_delta", "partial_json": "{oops"}), _end(0), STOP]
        )


@pytest.mark.parametrize("answer", [None, ["a"], {"content": "text"}])
def test_an_answer_that_is_not_a_message_is_retried(answer):
    with pytest.raises(ApplicationError, match="answered no message") as raised:
        from_anthropic(answer)
    assert raised.value.type == "InvalidModelOutput"
