"""A streamed chat completion, read as the JSON chunks the server sent (infra/models/openai_stream.py), adds
up to the completion it amounts to, and a chunk that is not a chat-completion chunk is the provider's fault."""

import pytest
from temporalio.exceptions import ApplicationError

from infra.models.openai_stream import joined


async def _joined(chunks: list[object]) -> tuple[dict, list[str]]:
    texts: list[str] = []

    async def on_text(text: str) -> None:
        texts.append(text)

    async def stream():
        for chunk in chunks:
            yield chunk

    return dict(await joined(stream(), on_text)), texts


def _chunk(delta: dict, finish: str | None = None) -> dict:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"id": "c1", "object": "chat.completion.chunk", "created": 7, "model": "m", "choices": [choice]}


async def test_text_pieces_are_passed_on_and_added_up_with_the_usage():
    usage = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    chunks = [
        _chunk({"role": "assistant", "content": "Hel"}),
        _chunk({"content": "lo"}),
        _chunk({"content": None}),
    ]
    answer, texts = await _joined([*chunks, _chunk({}, "stop"), {"id": "c1", "choices": [], "usage": usage}])
    assert texts == ["Hel", "lo"]
    assert answer["choices"] == [
        {"index": 0, "message": {"role": "assistant", "content": "Hello"}, "finish_reason": "stop"}
    ]
    assert (answer["id"], answer["created"], answer["model"], answer["usage"]) == ("c1", 7, "m", usage)


async def test_tool_calls_streamed_in_pieces_are_put_together_in_index_order():
    first = {"index": 1, "id": "b", "type": "function", "function": {"name": "two", "arguments": '{"y"'}}
    second = {"index": 0, "id": "a", "type": "function", "function": {"name": "one", "arguments": ""}}
    rest = [
        {"index": 0, "function": {"arguments": '{"x": 1}'}},
        {"index": 1, "function": {"arguments": ": 2}"}},
    ]
    chunks = [_chunk({"tool_calls": [first, second]}), _chunk({"tool_calls": rest}, "tool_calls")]
    answer, texts = await _joined(chunks)
    assert texts == []
    message = answer["choices"][0]["message"]
    assert message["content"] is None
    assert message["tool_calls"] == [
        {"id": "a", "type": "function", "function": {"name": "one", "arguments": '{"x": 1}'}},
        {"id": "b", "type": "function", "function": {"name": "two", "arguments": '{"y": 2}'}},
    ]


@pytest.mark.parametrize("chunks", [[], [_chunk({"content": "cut"})]], ids=["empty", "no finish"])
async def test_a_stream_that_ends_before_its_answer_is_retried(chunks):
    with pytest.raises(ApplicationError, match="ended before its answer did") as raised:
        await _joined(chunks)
    assert raised.value.type == "ModelUnavailable" and not raised.value.non_retryable


@pytest.mark.parametrize(
    "chunk",
    [
        ["not", "a", "chunk"],
        {"choices": "none"},
        {"choices": [{"delta": "text"}]},
        _chunk({"content": 42}),
        _chunk({"tool_calls": [{"id": "a", "function": {"name": "f"}}]}),
    ],
    ids=["list", "choices", "delta", "content", "tool call index"],
)
async def test_a_chunk_that_is_not_a_chat_completion_chunk_is_retried(chunk):
    with pytest.raises(ApplicationError, match="not a chat completion") as raised:
        await _joined([chunk, _chunk({}, "stop")])
    assert raised.value.type == "InvalidModelOutput" and not raised.value.non_retryable
