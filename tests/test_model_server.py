"""The fake model server against the real OpenAI and Anthropic SDKs: plain text, tool calls, streaming, errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from contracts.calls import ModelRequest, Owner
from infra.models.client import ModelClient
from infra.settings import Settings
from tests.model_server import Call, ModelServer, Reply

CLAUDE = "claude-test"  # a made-up name: the SDK warns (an error here) about real models it deems deprecated
WEATHER_OPENAI: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
WEATHER_ANTHROPIC: Any = {
    "name": "get_weather",
    "description": "Current weather for a city",
    "input_schema": WEATHER_OPENAI["function"]["parameters"],
}


def weather_agent(call: Call) -> Reply:
    """Asks for the weather first, then answers from the tool's result."""
    if call.messages[-1]["role"] == "tool":
        return Reply(content=f"It is {call.messages[-1]['content']} in Paris.")
    return Reply(tool_calls=[("get_weather", {"city": "Paris"})])


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer() as running:
        yield running


def openai_client(server: ModelServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.openai_base_url, api_key="test", max_retries=0)


def anthropic_client(server: ModelServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="test", max_retries=0)


def test_openai_text(server: ModelServer) -> None:
    with openai_client(server) as client:
        completion = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hello"}]
        )
    assert completion.model == "gpt-4o-mini"
    assert completion.choices[0].message.content == "echo: hello"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None
    assert (
        completion.usage.total_tokens == completion.usage.prompt_tokens + completion.usage.completion_tokens
    )
    assert server.calls[0].provider == "openai" and server.calls[0].model == "gpt-4o-mini"
    assert server.calls[0].headers["authorization"] == "Bearer test"


async def test_openai_async_text(server: ModelServer) -> None:
    async with openai.AsyncOpenAI(base_url=server.openai_base_url, api_key="test", max_retries=0) as client:
        completion = await client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": [{"type": "text", "text": "hi there"}]}]
        )
    assert completion.choices[0].message.content == "echo: hi there"
    assert server.calls[0].messages == [{"role": "user", "content": "hi there"}]


def test_openai_tool_round_trip() -> None:
    with ModelServer(weather_agent) as server, openai_client(server) as client:
        messages: list = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather?"}]
        first = client.chat.completions.create(model="gpt-4o", messages=messages, tools=[WEATHER_OPENAI])
        assert first.choices[0].finish_reason == "tool_calls"
        (tool_call,) = first.choices[0].message.tool_calls or []
        assert tool_call.type == "function"
        assert (tool_call.id, tool_call.function.name) == ("call_1", "get_weather")
        assert json.loads(tool_call.function.arguments) == {"city": "Paris"}

        messages += [
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": tool_call.id, "content": "sunny"},
        ]
        second = client.chat.completions.create(model="gpt-4o", messages=messages, tools=[WEATHER_OPENAI])
        assert second.choices[0].message.content == "It is sunny in Paris."

    assert server.calls[0].tools == [
        {
            "name": "get_weather",
            "description": "Current weather for a city",
            "parameters": WEATHER_OPENAI["function"]["parameters"],
        }
    ]
    assert server.calls[1].messages[2]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert server.calls[1].messages[3] == {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}


def test_openai_streaming_text(server: ModelServer) -> None:
    with openai_client(server) as client:
        stream = client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "a longer sentence to split into pieces"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "echo: a longer sentence to split into pieces"
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) > 1
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0


def test_openai_streaming_tool_call() -> None:
    def two_cities(call: Call) -> Reply:
        return Reply(tool_calls=[("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})])

    with ModelServer(two_cities) as server, openai_client(server) as client:
        stream = client.chat.completions.create(
            model="gpt-4o",
            messages=[{"role": "user", "content": "Weather in Paris and Rome?"}],
            tools=[WEATHER_OPENAI],
            stream=True,
        )
        calls: dict[int, dict] = {}
        finish = None
        for chunk in stream:
            choice = chunk.choices[0]
            finish = choice.finish_reason or finish
            for delta in choice.delta.tool_calls or []:
                assembled = calls.setdefault(delta.index, {"id": None, "name": "", "arguments": ""})
                assembled["id"] = delta.id or assembled["id"]
                if delta.function:
                    assembled["name"] += delta.function.name or ""
                    assembled["arguments"] += delta.function.arguments or ""
    assert finish == "tool_calls"
    assert [(c["name"], json.loads(c["arguments"])) for c in calls.values()] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Rome"}),
    ]
    assert len({c["id"] for c in calls.values()}) == 2


def test_anthropic_text(server: ModelServer) -> None:
    with anthropic_client(server) as client:
        message = client.messages.create(
            model=CLAUDE,
            max_tokens=100,
            system="Be brief.",
            messages=[{"role": "user", "content": "hello"}],
        )
    assert message.model == CLAUDE
    assert message.content[0].type == "text" and message.content[0].text == "echo: hello"
    assert message.stop_reason == "end_turn"
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0
    assert server.calls[0].messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hello"},
    ]


def test_anthropic_tool_round_trip() -> None:
    with ModelServer(weather_agent) as server, anthropic_client(server) as client:
        messages: list = [{"role": "user", "content": "Weather?"}]
        first = client.messages.create(
            model=CLAUDE, max_tokens=100, messages=messages, tools=[WEATHER_ANTHROPIC]
        )
        assert first.stop_reason == "tool_use"
        (tool_use,) = first.content
        assert tool_use.type == "tool_use"
        assert (tool_use.id, tool_use.name, tool_use.input) == ("toolu_1", "get_weather", {"city": "Paris"})

        messages += [
            {
                "role": "assistant",
                "content": [block.model_dump(exclude_none=True) for block in first.content],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": tool_use.id, "content": "sunny"}],
            },
        ]
        second = client.messages.create(
            model=CLAUDE, max_tokens=100, messages=messages, tools=[WEATHER_ANTHROPIC]
        )
        assert second.content[0].type == "text" and second.content[0].text == "It is sunny in Paris."

    assert server.calls[0].tools == [
        {
            "name": "get_weather",
            "description": "Current weather for a city",
            "parameters": WEATHER_ANTHROPIC["input_schema"],
        }
    ]
    assert server.calls[1].messages == [
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "toolu_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "toolu_1", "content": "sunny"},
    ]


def test_anthropic_streaming() -> None:
    def narrated(call: Call) -> Reply:
        return Reply(content="Checking the weather now.", tool_calls=[("get_weather", {"city": "Oslo"})])

    with ModelServer(narrated) as server, anthropic_client(server) as client:
        with client.messages.stream(
            model=CLAUDE,
            max_tokens=100,
            messages=[{"role": "user", "content": "Weather in Oslo?"}],
            tools=[WEATHER_ANTHROPIC],
        ) as stream:
            text = "".join(stream.text_stream)
            final = stream.get_final_message()
    assert text == "Checking the weather now."
    assert [block.type for block in final.content] == ["text", "tool_use"]
    assert final.content[1].type == "tool_use" and final.content[1].input == {"city": "Oslo"}
    assert final.stop_reason == "tool_use"
    assert final.usage.output_tokens > 0


def test_rate_limit_errors() -> None:
    with ModelServer(lambda call: Reply(status=429, content="slow down")) as server:
        with openai_client(server) as client, pytest.raises(openai.RateLimitError, match="slow down"):
            client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        with anthropic_client(server) as client, pytest.raises(anthropic.RateLimitError, match="slow down"):
            client.messages.create(model=CLAUDE, max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    assert [call.provider for call in server.calls] == ["openai", "anthropic"]


def test_script_bug_is_a_500() -> None:
    def broken(call: Call) -> Reply:
        raise KeyError("oops")

    with ModelServer(broken) as server, openai_client(server) as client:
        with pytest.raises(openai.InternalServerError, match="KeyError"):
            client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])


def test_models_list() -> None:
    with ModelServer(models=["gpt-4o-mini", "gpt-4o", "o3"]) as server, openai_client(server) as client:
        assert [model.id for model in client.models.list()] == ["gpt-4o-mini", "gpt-4o", "o3"]


async def test_a_named_endpoint_gets_julep_s_extra_settings_in_its_body(server: ModelServer) -> None:
    # vLLM and the like take min_p, repetition_penalty and length_penalty; OpenAI's own API refuses them.
    config = Settings(
        model_endpoints=(("vllm", server.openai_base_url),),
        openai_api_key="k",
        openai_base_url=server.openai_base_url,
    ).model_config()
    client = ModelClient(config)
    settings = {"min_p": 0.1, "repetition_penalty": 1.1, "length_penalty": 0.9, "logit_bias": {"1": 5}}
    messages = [{"role": "user", "content": "hi"}]
    await client.complete(ModelRequest("vllm/qwen", messages, settings, [], None, None, "t", Owner("d")))
    assert {k: server.calls[-1].body.get(k) for k in settings} == settings
    assert client.unsupported("vllm/qwen", settings) == []
    await client.complete(ModelRequest("gpt-4o-mini", messages, settings, [], None, None, "t", Owner("d")))
    assert not {"min_p", "repetition_penalty", "length_penalty"} & set(server.calls[-1].body)
    assert server.calls[-1].body["logit_bias"] == {"1": 5}
    assert client.unsupported("gpt-4o-mini", settings) == ["min_p", "repetition_penalty", "length_penalty"]
    assert client.unsupported("claude-3-5-haiku-latest", settings) == [
        "logit_bias",
        *client.unsupported("gpt-4o-mini", settings),
    ]
