"""What a chat adds to its provider's time, measured against bench/model_server.py in the same process:

- streamed: (the client's time to its first token) - (the model server's time to its first token);
- not streamed: (the client's time to the whole answer) - (the model server's time to its whole answer).

Both over Mint's `POST /sessions/{id}/chat` and, as the floor, over the OpenAI SDK calling the model server
directly (what any client of the provider pays)."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Awaitable, Callable

import httpx
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionUserMessageParam

from bench.model_server import TimedModelServer

REPS = 5
MESSAGE: ChatCompletionUserMessageParam = {"role": "user", "content": "Say hello."}


async def _added(server: TimedModelServer, ask: Callable[[], Awaitable[float]], stream: bool) -> float:
    """One call's ms over the provider's: `ask` answers the client's own time (to the first token when
    streamed), in ms."""
    client_ms = await ask()
    served = server.last()
    return client_ms - (served.first_token_ms if stream else served.answer_ms)


async def _median(server: TimedModelServer, ask: Callable[[], Awaitable[float]], stream: bool) -> float:
    return statistics.median([await _added(server, ask, stream) for _ in range(REPS)])


def _has_text(line: str) -> bool:
    if not line.startswith("data:"):
        return False
    choices = json.loads(line[5:]).get("choices") or []
    return any((choice.get("delta") or {}).get("content") for choice in choices)


async def mint_stream(api: httpx.AsyncClient, session_id: str) -> float:
    """A streamed chat's ms to its first token at the client; the rest of the stream is read, untimed."""
    began, first = time.perf_counter(), 0.0
    body = {"messages": [MESSAGE], "stream": True}
    async with api.stream("POST", f"/sessions/{session_id}/chat", json=body) as response:
        assert response.status_code in (200, 201), await response.aread()
        async for line in response.aiter_lines():
            if not first and _has_text(line):
                first = time.perf_counter()
    assert first, "the stream carried no text"
    return (first - began) * 1000


async def mint_answer(api: httpx.AsyncClient, session_id: str) -> float:
    began = time.perf_counter()
    response = await api.post(f"/sessions/{session_id}/chat", json={"messages": [MESSAGE]})
    assert response.status_code == 201, response.text
    return (time.perf_counter() - began) * 1000


async def direct_stream(client: AsyncOpenAI) -> float:
    began, first = time.perf_counter(), 0.0
    chunks = await client.chat.completions.create(model="gpt-4o-mini", messages=[MESSAGE], stream=True)
    async for chunk in chunks:
        if not first and chunk.choices and chunk.choices[0].delta.content:
            first = time.perf_counter()
    return (first - began) * 1000


async def direct_answer(client: AsyncOpenAI) -> float:
    began = time.perf_counter()
    await client.chat.completions.create(model="gpt-4o-mini", messages=[MESSAGE])
    return (time.perf_counter() - began) * 1000


async def chat_measures(
    server: TimedModelServer, api: httpx.AsyncClient, session_id: str, direct: AsyncOpenAI
) -> dict[str, float]:
    """The four medians, each over REPS calls: Mint's streamed and plain chats, and the SDK's floor."""
    return {
        "chat_first_token": await _median(server, lambda: mint_stream(api, session_id), True),
        "chat_first_token_floor": await _median(server, lambda: direct_stream(direct), True),
        "chat_answer": await _median(server, lambda: mint_answer(api, session_id), False),
        "chat_answer_floor": await _median(server, lambda: direct_answer(direct), False),
    }
