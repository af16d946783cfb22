"""Executions that loop for ever: tail yields run in constant space and continue-as-new keeps histories short."""

import asyncio
import uuid
from datetime import timedelta

import httpx

from tests.conftest import temporal_address
from tests.helpers import create_agent, create_task, start, wait_for_status
from tests.stack import BackgroundStack

# Counts to `until` by yielding to itself; each round is three pure steps and a tail yield.
COUNT_LOOP = """
name: count
main:
- workflow: count
  arguments: '{"n": 0, "until": inputs[0]["until"]}'
count:
- if: _["n"] >= _["until"]
  then:
    return: _
- evaluate:
    n: _["n"] + 1
    until: _["until"]
- workflow: count
"""

# The seed's Daily Motivation loop without its model calls: think, sleep a day, start over.
DAILY_LOOP = """
name: daily
main:
- evaluate:
    topic: _["topics"][randint(len(_["topics"]))]
- sleep: 24*3600
- workflow: main
  arguments: inputs[0]
"""


async def all_transitions(api: httpx.AsyncClient, execution_id: str) -> list[dict]:
    rows: list[dict] = []
    while True:
        page = await api.get(
            f"/executions/{execution_id}/transitions",
            params={"direction": "asc", "limit": 1000, "offset": len(rows)},
        )
        rows += page.json()["items"]
        if len(page.json()["items"]) < 1000:
            return rows


async def test_a_loop_of_5000_tail_yields_finishes(api):
    task = await create_task(api, (await create_agent(api))["id"], COUNT_LOOP)
    execution = await start(api, task["id"], {"until": 5000})
    done = await wait_for_status(api, execution["id"], timeout=300)
    assert done["status"] == "succeeded", done
    assert done["output"] == {"n": 5000, "until": 5000}
    rows = await all_transitions(api, execution["id"])
    assert [r["type"] for r in rows[:2]] == ["init", "init_branch"] and rows[-1]["type"] == "finish"
    assert sum(r["type"] == "init_branch" for r in rows) == 5001
    assert len(rows) == done["transition_count"]


async def test_long_executions_continue_as_new_without_a_seam(postgres_url, time_skipping_env, api_key):
    stack = BackgroundStack(
        postgres_url,
        temporal_address(time_skipping_env),
        task_queue=f"long-{uuid.uuid4()}",
        max_history_events=150,
    )
    await asyncio.to_thread(stack.start)
    try:
        async with httpx.AsyncClient(
            base_url=stack.url, headers={"Authorization": f"Bearer {api_key}"}
        ) as api:
            task = await create_task(api, (await create_agent(api))["id"], DAILY_LOOP)
            execution = await start(api, task["id"], {"topics": ["focus", "rest"]})
            await wait_for_status(api, execution["id"], {"running"})
            await time_skipping_env.sleep(timedelta(days=400))
            await asyncio.sleep(1)
            rows = await all_transitions(api, execution["id"])
            assert (await api.get(f"/executions/{execution['id']}")).json()["status"] == "running"
            days = sum(r["type"] == "init_branch" for r in rows)
            assert days >= 300, days  # a day is: evaluate, sleep, then a tail yield into main
            assert [r["type"] for r in rows].count("init") == 1
            assert len(rows) == len({r["id"] for r in rows})
            # 400 days are ~3,000 history events; this run holds only those since the last continue-as-new.
            latest = await time_skipping_env.client.get_workflow_handle(execution["id"]).describe()
            assert latest.history_length < 300, latest.history_length
            assert all(
                r["output"]["topic"] in ("focus", "rest")
                for r in rows
                if r["current"]["step"] == 0 and r["type"] == "step"
            )
    finally:
        await asyncio.to_thread(stack.stop)
