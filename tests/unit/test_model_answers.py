"""What a provider answers is JSON of a chat completion's shape, or a retried failure: through the real SDKs
to a local server answering what a broken or hostile provider would (not JSON, nested past what Python's JSON
reader takes, content that is not text or parts, tool calls that are not calls)."""

import json

import pytest
from temporalio.exceptions import ApplicationError

from contracts.calls import ModelRequest, Owner
from infra.models.client import ModelClient
from infra.settings import ModelConfig
from tests.local_http import LocalServer

MESSAGE = {"role": "user", "content": "hi"}


def _completion(message: dict) -> bytes:
    return json.dumps(
        {"id": "x", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
    ).encode()


class _Provider:
    """One local server for the module (a server's shutdown takes half a second), answering `body`."""

    def __init__(self) -> None:
        self.body, self.kind = b"", "application/json"
        self.server = LocalServer(lambda _: (200, {"Content-Type": self.kind}, self.body))


@pytest.fixture(scope="module")
def provider_server():
    provider = _Provider()
    yield provider
    provider.server.close()


async def _answer(server: _Provider, provider: str, body: bytes, stream: bool = False):
    server.body, server.kind = body, "text/event-stream" if stream else "application/json"
    url = server.server.url
    config = ModelConfig(
        openai_api_key="sk-test", openai_base_url=url, anthropic_api_key="sk-test", anthropic_base_url=url
    )
    model = "gpt-4o-mini" if provider == "openai" else "claude-haiku-4-5"
    request = ModelRequest(
        model=model,
        messages=[MESSAGE],
        settings={},
        tools=[],
        tool_choice=None,
        response_format=None,
        at="test",
        owner=Owner(developer_id="d"),
    )

    async def on_text(text: str) -> None:
        pass

    return await ModelClient(config).complete(request, on_text if stream else None)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("stream", [False, True], ids=["answer", "stream"])
@pytest.mark.parametrize(
    "body", [b"<html>oops</html>", b"[" * 5000 + b"]" * 5000], ids=["not JSON", "too deep"]
)
async def test_an_answer_that_is_not_json_is_retried(provider_server, provider, stream, body):
    with pytest.raises(ApplicationError, match=f"{provider} answered something that is not JSON") as raised:
        await _answer(
            provider_server,
            provider,
            b"event: message_start\ndata: " + body + b"\n\n" if stream else body,
            stream,
        )
    assert raised.value.type == "InvalidModelOutput" and not raised.value.non_retryable


@pytest.mark.parametrize(
    "message",
    [
        {"role": "assistant", "content": [["nested"]]},
        {"role": "assistant", "content": [{"text": "no type"}]},
        {"role": "assistant", "content": None, "tool_calls": ["call"]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "function": "f"}]},
    ],
    ids=["parts in parts", "part without type", "call not an object", "function not an object"],
)
async def test_an_answer_that_is_no_chat_completion_is_retried(provider_server, message):
    with pytest.raises(ApplicationError, match="openai answered no chat completion") as raised:
        await _answer(provider_server, "openai", _completion(message))
    assert raised.value.type == "InvalidModelOutput"


async def test_content_parts_and_calls_of_the_right_shape_are_an_answer(provider_server):
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    message = {"role": "assistant", "content": [{"type": "text", "text": "hi"}], "tool_calls": [call]}
    answer = await _answer(provider_server, "openai", _completion(message))
    assert answer.response["choices"][0]["message"] == message
