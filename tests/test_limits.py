"""Limits answer with a clear 413 or 429: request bodies, requests per key per minute, executions in flight."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import httpx
import pytest_asyncio

from tests.conftest import temporal_address
from tests.helpers import create_agent, create_task, start, wait_for_status
from tests.stack import BackgroundStack


@pytest_asyncio.fixture(loop_scope="session")
async def limited(postgres_url, temporal_env) -> AsyncIterator[BackgroundStack]:
    async with BackgroundStack(
        postgres_url,
        temporal_address(temporal_env),
        task_queue=f"limits-{uuid.uuid4()}",
        max_body_bytes=20_000,
        rate_limit_per_minute=30,
        max_executions_in_flight=2,
    ) as stack:
        yield stack


async def _client(stack: BackgroundStack, store) -> httpx.AsyncClient:
    _, key = await store.create_developer("limited")
    return httpx.AsyncClient(base_url=stack.url, headers={"Authorization": f"Bearer {key}"})


async def test_a_body_over_the_limit_is_413(limited, store):
    async with await _client(limited, store) as api:
        response = await api.post("/agents", json={"name": "big", "about": "x" * 30_000})
        assert response.status_code == 413
        assert (await api.post("/agents", json={"name": "small"})).status_code == 201


async def test_a_key_over_its_rate_is_429_with_retry_after(limited, store):
    async with await _client(limited, store) as api, await _client(limited, store) as other:
        statuses = [(await api.get("/agents")).status_code for _ in range(40)]
        assert statuses[:30] == [200] * 30 and set(statuses[30:]) == {429}
        limited_answer = await api.get("/agents")
        assert int(limited_answer.headers["Retry-After"]) >= 1
        assert "per minute" in limited_answer.json()["error"]
        assert (await other.get("/agents")).status_code == 200  # each key has its own budget


async def test_executions_in_flight_are_capped_per_developer(limited, store):
    async with await _client(limited, store) as api:
        agent = await create_agent(api)
        task = await create_task(
            api, agent["id"], {"name": "wait", "main": [{"wait_for_input": {"info": {}}}]}
        )
        waiting = [await start(api, task["id"]) for _ in range(2)]
        for execution in waiting:
            await wait_for_status(api, execution["id"], {"awaiting_input"})
        refused = await api.post(f"/tasks/{task['id']}/executions", json={"input": {}})
        assert refused.status_code == 429 and "in flight" in refused.json()["error"]
        await api.put(f"/executions/{waiting[0]['id']}", json={"status": "cancelled"})
        await wait_for_status(api, waiting[0]["id"], {"cancelled"})
        assert (await api.post(f"/tasks/{task['id']}/executions", json={"input": {}})).status_code == 201
