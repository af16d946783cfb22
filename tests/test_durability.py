"""Executions outlive workers, and long sleeps are durable timers (time-skipping server)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import httpx

from tests.conftest import temporal_address
from tests.helpers import create_agent, create_task, start, transitions, wait_for_status
from tests.stack import BackgroundStack

WAITING_TASK = {
    "name": "wait across restarts",
    "main": [
        {"evaluate": {"before": "$ 'restart me'"}},
        {"wait_for_input": {"info": {"question": "$ _['before']"}}},
        {"evaluate": {"answer": "$ _['answer'] * 2"}},
    ],
}


async def _client(stack: BackgroundStack, key: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=stack.url, headers={"Authorization": f"Bearer {key}"}, timeout=30)


async def test_waiting_execution_survives_a_worker_restart(postgres_url, temporal_env, api_key):
    queue = f"restart-{uuid.uuid4()}"  # a queue of its own, so the session's worker cannot step in
    address = temporal_address(temporal_env)
    first = await asyncio.to_thread(BackgroundStack(postgres_url, address, task_queue=queue).start)
    async with await _client(first, api_key) as api:
        task = await create_task(api, (await create_agent(api))["id"], WAITING_TASK)
        execution = await start(api, task["id"])
        await wait_for_status(api, execution["id"], {"awaiting_input"})
    await asyncio.to_thread(first.stop)

    second = await asyncio.to_thread(BackgroundStack(postgres_url, address, task_queue=queue).start)
    try:
        async with await _client(second, api_key) as api:
            response = await api.put(
                f"/executions/{execution['id']}", json={"status": "running", "input": {"answer": 21}}
            )
            assert response.status_code == 200, response.text
            done = await wait_for_status(api, execution["id"])
            assert done["status"] == "succeeded" and done["output"] == {"answer": 42}
            kinds = [t["type"] for t in await transitions(api, execution["id"])]
            assert kinds == ["init", "step", "wait", "resume", "step", "step", "finish"]
    finally:
        await asyncio.to_thread(second.stop)


# Both sleep forms: the `$` dialect's {days: ...} and the seed's expression in seconds.
MONTH_OF_SLEEP = """
name: two months of sleep
main:
- sleep: {days: 30}
- sleep: 30 * 24 * 3600
- evaluate:
    woke: 1 == 1
"""


async def test_thirty_day_sleep_finishes_in_seconds(postgres_url, time_skipping_env, api_key):
    stack = await asyncio.to_thread(
        BackgroundStack(postgres_url, temporal_address(time_skipping_env), task_queue="mint-tasks").start
    )
    try:
        async with await _client(stack, api_key) as api:
            task = await create_task(api, (await create_agent(api))["id"], MONTH_OF_SLEEP)
            execution = await start(api, task["id"])
            await wait_for_status(api, execution["id"], {"running"})
            await time_skipping_env.sleep(timedelta(days=61))  # the test server jumps its clock
            done = await wait_for_status(api, execution["id"])
            assert done["status"] == "succeeded" and done["output"] == {"woke": True}, done
            kinds = [t["type"] for t in await transitions(api, execution["id"])]
            assert kinds == ["init", "step", "step", "step", "finish"]
    finally:
        await asyncio.to_thread(stack.stop)


async def test_a_duplicate_resume_never_answers_the_next_question(api):
    task = await create_task(
        api,
        (await create_agent(api))["id"],
        {
            "name": "two questions",
            "main": [
                {"wait_for_input": {"info": {"q": "$ 'first'"}}},
                {"sleep": {"seconds": 1}},
                {"wait_for_input": {"info": {"q": "$ 'second'"}}},
                {"return": {"first": "$ steps[0].output", "second": "$ _"}},
            ],
        },
    )
    execution = await start(api, task["id"])
    await wait_for_status(api, execution["id"], {"awaiting_input"})
    body = {"status": "running", "input": "answer to first"}
    first, duplicate = await asyncio.gather(
        api.put(f"/executions/{execution['id']}", json=body),
        api.put(f"/executions/{execution['id']}", json=body),
    )
    assert first.status_code in (200, 409) and duplicate.status_code in (200, 409)
    await asyncio.sleep(2)  # past the sleep: the second question is asked
    waiting = await wait_for_status(api, execution["id"], {"awaiting_input"})
    rows = await transitions(api, execution["id"])
    assert [r["output"]["info"]["q"] for r in rows if r["type"] == "wait"] == ["first", "second"]
    assert sum(r["type"] == "resume" for r in rows) == 1  # the duplicate answered nothing
    await api.put(f"/executions/{waiting['id']}", json={"status": "running", "input": "answer to second"})
    done = await wait_for_status(api, execution["id"])
    assert done["output"] == {"first": "answer to first", "second": "answer to second"}
