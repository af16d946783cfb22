"""Limits answer with a clear 4xx or 429: request bodies, requests per key per minute, executions in flight,
task size, expression length, steps per task, chats per developer, schedules per developer; a fan-out over its limit fails its step,
naming the limit; a used-up database pool or a long lock wait answers 503 instead of hanging."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import httpx
import pytest_asyncio

from contracts.records.schedules import ScheduleSpec
from infra.store.schedules import ScheduleStore
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
        max_task_bytes=5_000,
        max_expression_length=200,
        max_steps=10,
        max_fan_out=5,
        max_schedules_per_developer=2,
    ) as stack:
        yield stack


async def _client(stack: BackgroundStack, store) -> httpx.AsyncClient:
    _, key = await store.create_developer("limited")
    return httpx.AsyncClient(base_url=stack.url, headers={"Authorization": f"Bearer {key}"})


async def test_schedules_past_the_developers_limit_are_429_until_one_is_deleted(limited, store):
    async with await _client(limited, store) as api, await _client(limited, store) as other:
        agent = await create_agent(api)
        task = await create_task(api, agent["id"], {"name": "tick", "main": [{"evaluate": {"x": "$ 1"}}]})
        made = [
            await api.post(f"/tasks/{task['id']}/schedules", json={"every": "1h", "paused": True})
            for _ in "ab"
        ]
        assert [m.status_code for m in made] == [201, 201], [m.text for m in made]
        over = await api.post(f"/tasks/{task['id']}/schedules", json={"every": "1h"})
        assert over.status_code == 429 and "MINT_MAX_SCHEDULES_PER_DEVELOPER" in over.text, over.text
        assert len((await api.get(f"/tasks/{task['id']}/schedules")).json()["items"]) == 2
        # The limit is each developer's own.
        theirs = await create_task(
            other, (await create_agent(other))["id"], {"name": "t", "main": [{"evaluate": {"x": "$ 1"}}]}
        )
        assert (
            await other.post(f"/tasks/{theirs['id']}/schedules", json={"every": "1h", "paused": True})
        ).status_code == 201
        assert (await api.delete(f"/schedules/{made[0].json()['id']}")).status_code in (202, 204)
        again = await api.post(f"/tasks/{task['id']}/schedules", json={"every": "1h", "paused": True})
        assert again.status_code == 201, again.text
        for response in (made[1], again):
            await api.delete(f"/schedules/{response.json()['id']}")
        await other.delete(f"/tasks/{theirs['id']}")


async def test_schedules_made_at_once_stop_at_the_limit(limited, store):
    async with await _client(limited, store) as api:
        agent = await create_agent(api)
        task = await create_task(api, agent["id"], {"name": "tick", "main": [{"evaluate": {"x": "$ 1"}}]})
        url = f"/tasks/{task['id']}/schedules"
        made = await asyncio.gather(*[api.post(url, json={"every": "1h", "paused": True}) for _ in range(10)])
        assert sorted(m.status_code for m in made) == [201] * 2 + [429] * 8, [m.text for m in made]
        assert len((await api.get(url)).json()["items"]) == 2
        # Straight at the store, 20 at once: the API's own pacing does not hide a race there.
        schedules = ScheduleStore(store.pool)
        owner = await schedules.owned((await api.get(url)).json()["items"][0]["id"])
        assert owner is not None
        spec = ScheduleSpec(every="1h")
        kept = await asyncio.gather(
            *[schedules.create(owner[0], str(uuid.uuid4()), task["id"], spec, True, 3) for _ in range(20)]
        )
        assert sum(k is not None for k in kept) == 1  # two were there, the limit is three
        await api.delete(f"/tasks/{task['id']}")


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
        assert "per minute" in limited_answer.json()["error"]["message"]
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
        assert refused.status_code == 429 and "in flight" in refused.json()["error"]["message"]
        await api.put(f"/executions/{waiting[0]['id']}", json={"status": "cancelled"})
        await wait_for_status(api, waiting[0]["id"], {"cancelled"})
        assert (await api.post(f"/tasks/{task['id']}/executions", json={"input": {}})).status_code == 201


async def test_a_task_over_the_size_limit_is_413(limited, store):
    async with await _client(limited, store) as api:
        agent = await create_agent(api)
        big = {"name": "big", "description": "x" * 6_000, "main": [{"evaluate": {"x": "$ 1"}}]}
        refused = await api.post(f"/agents/{agent['id']}/tasks", json=big)
        assert refused.status_code == 413
        assert "task size limit is 5000 bytes (MINT_MAX_TASK_BYTES)" in refused.json()["error"]["message"]
        # YAML aliases count at their expanded size: 1.2 KB of text, over 6 KB of task.
        aliased = (
            f"name: aliases\ndescription: &d {'y' * 900}\n"
            "metadata: {a: *d, b: *d, c: *d, d: *d, e: *d, f: *d}\n"
            "main: [{evaluate: {x: $ 1}}]\n"
        )
        refused = await api.post(
            f"/agents/{agent['id']}/tasks", content=aliased, headers={"Content-Type": "application/yaml"}
        )
        assert refused.status_code == 413 and "MINT_MAX_TASK_BYTES" in refused.json()["error"]["message"]
        await create_task(api, agent["id"], {**big, "description": "x" * 4_000})


async def test_an_expression_over_the_length_limit_is_422_with_its_path(limited, store):
    async with await _client(limited, store) as api:
        agent = await create_agent(api)
        long_sum = "$ " + " + ".join(["1"] * 50)  # 197 characters; 201 with ` + 1`, over the limit of 200
        task = {
            "name": "long",
            "main": [{"evaluate": {"ok": "$ 1"}}, {"evaluate": {"sum": long_sum + " + 1"}}],
        }
        refused = await api.post(f"/agents/{agent['id']}/tasks", json=task)
        assert refused.status_code == 422
        [problem] = refused.json()["error"]["details"]
        assert problem["loc"] == "main[1].evaluate.sum"
        assert "expression length limit is 200 (MINT_MAX_EXPRESSION_LENGTH)" in problem["msg"]
        task["main"][1] = {"evaluate": {"sum": long_sum}}
        await create_task(api, agent["id"], task)


async def test_a_task_over_the_step_limit_is_422_naming_the_first_step_past_it(limited, store):
    async with await _client(limited, store) as api:
        agent = await create_agent(api)
        nested = {"if": "$ True", "then": [{"evaluate": {"x": "$ 1"}}] * 3}  # four steps
        task = {"name": "many", "main": [nested, nested], "other": [{"evaluate": {"y": "$ 2"}}] * 3}
        refused = await api.post(f"/agents/{agent['id']}/tasks", json=task)
        assert refused.status_code == 422
        [problem] = refused.json()["error"]["details"]
        assert problem["loc"] == "other[2]"  # the eleventh step
        assert "11 steps" in problem["msg"] and "step limit is 10 (MINT_MAX_STEPS)" in problem["msg"]
        task["other"] = task["other"][:2]
        await create_task(api, agent["id"], task)


async def test_a_fan_out_over_the_limit_fails_its_step(limited, store):
    async with await _client(limited, store) as api:
        agent = await create_agent(api)
        for count, loop in [(5, "map"), (6, "map"), (6, "foreach")]:
            if loop == "map":
                step = {"over": f"$ list(range({count}))", "map": {"evaluate": {"x": "$ _"}}}
            else:
                step = {"foreach": {"in": f"$ list(range({count}))", "do": {"evaluate": {"x": "$ _"}}}}
            task = await create_task(api, agent["id"], {"name": f"{loop}-{count}", "main": [step]})
            done = await wait_for_status(api, (await start(api, task["id"]))["id"])
            if count == 5:
                assert done["status"] == "succeeded", done
                continue
            assert done["status"] == "failed"
            assert "6 items is over the fan-out limit of 5 items (MINT_MAX_FAN_OUT)" in done["error"]
            assert ("main[0].over" if loop == "map" else "main[0].foreach.in") in done["error"]


async def test_a_used_up_pool_answers_503_and_a_lock_wait_ends_instead_of_hanging(
    postgres_url, temporal_env, store
):
    """With one API connection: a request stuck behind a table lock holds it; another request gets a clear 503
    within the acquire timeout, not a hang; the stuck one ends with a 503 at the lock timeout."""
    _, key = await store.create_developer("one connection")
    async with (
        BackgroundStack(
            postgres_url,
            temporal_address(temporal_env),
            task_queue=f"pool-{uuid.uuid4()}",
            api_db_pool_size=1,
            db_acquire_timeout=0.5,
        ) as stack,
        httpx.AsyncClient(base_url=stack.url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as api,
        store.pool.acquire() as locker,
    ):
        assert (await api.get("/agents")).status_code == 200
        async with locker.transaction():
            await locker.execute("LOCK TABLE agents IN ACCESS EXCLUSIVE MODE")
            stuck = asyncio.create_task(api.get("/agents"))
            while not await store.pool.fetchval(
                "SELECT count(*) FROM pg_locks WHERE relation = 'agents'::regclass AND NOT granted"
            ):
                await asyncio.sleep(0.05)
            busy = await api.get("/healthz")
            assert busy.status_code == 503, busy.text
            assert "no database connection became free within 0.5 s" in busy.json()["error"]["message"]
            assert busy.headers["Retry-After"] == "1"
            locked_out = await stuck  # lock_timeout (infra/store/db.py) ends it; the lock is still held
        assert locked_out.status_code == 503 and "locked" in locked_out.json()["error"]["message"]
        assert (await api.get("/agents")).status_code == 200


async def test_chats_in_flight_are_capped_per_developer(
    postgres_url, temporal_env, store, model_server, script
):
    """Past MINT_MAX_CHATS_PER_DEVELOPER chats at once, a developer's next chat is a 429; another developer
    chats meanwhile, and once a chat ends the first may chat again."""
    import threading

    from tests.conftest import OPENAI_KEY
    from tests.model_server import Reply

    release = threading.Event()

    def slow_model(call):  # holds each chat of the first developer until released
        if call.messages[-1]["content"] == "hold":
            release.wait(60)
        return Reply(content="done")

    script.reply = slow_model
    model_server.calls.clear()
    async with BackgroundStack(
        postgres_url,
        temporal_address(temporal_env),
        task_queue=f"chats-{uuid.uuid4()}",
        openai_api_key=OPENAI_KEY,
        openai_base_url=model_server.openai_base_url,
        max_chats_per_developer=2,
    ) as stack:
        first, second = await _client(stack, store), await _client(stack, store)
        async with first, second:

            async def chat(api: httpx.AsyncClient, text: str) -> httpx.Response:
                agent = await create_agent(api)
                session = (await api.post("/sessions", json={"agent": agent["id"]})).json()
                return await api.post(
                    f"/sessions/{session['id']}/chat",
                    json={"messages": [{"role": "user", "content": text}]},
                    timeout=60,
                )

            held = [asyncio.create_task(chat(first, "hold")) for _ in range(2)]
            while len(model_server.calls) < 2:
                await asyncio.sleep(0.05)
            refused = await chat(first, "one more")
            assert refused.status_code == 429, refused.text
            assert "MINT_MAX_CHATS_PER_DEVELOPER" in refused.json()["error"]["message"]
            assert (await chat(second, "other tenant")).status_code == 201
            release.set()
            assert [r.status_code for r in await asyncio.gather(*held)] == [201, 201]
            assert (await chat(first, "again")).status_code == 201
