"""The API routes the CLI reads besides Julep's: every execution of a developer (`mint ls`), an execution's
open timers (when a sleep wakes), and a task saved again unchanged keeping its version."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from tests.helpers import create_agent, create_task, run_task, start, wait_for_status

TINY = {"name": "tiny", "main": [{"evaluate": {"x": "$ 1"}}]}
WAITS = {"name": "waits", "main": [{"wait_for_input": {"info": {"question": "ok?"}, "timeout": 3600}}]}
SLEEPS = {"name": "sleeps", "main": [{"evaluate": {"x": "$ 1"}}, {"sleep": {"hours": 2}}]}


async def test_executions_are_listed_across_tasks_newest_first_with_their_task_names(api):
    agent = (await create_agent(api))["id"]
    done, _ = await run_task(api, TINY, agent_id=agent)
    waiting = await start(api, (await create_task(api, agent, WAITS))["id"])
    await wait_for_status(api, waiting["id"], {"awaiting_input"})

    items = (await api.get("/executions")).json()["items"]
    assert [(e["id"], e["task_name"], e["status"]) for e in items] == [
        (waiting["id"], "waits", "awaiting_input"),
        (done["id"], "tiny", "succeeded"),
    ]
    only = (await api.get("/executions", params={"status": "succeeded"})).json()["items"]
    assert [e["id"] for e in only] == [done["id"]]
    oldest = (await api.get("/executions", params={"direction": "asc", "limit": 1})).json()["items"]
    assert [e["id"] for e in oldest] == [done["id"]]
    bad = await api.get("/executions", params={"status": "sleeping"})
    assert bad.status_code == 422 and bad.json()["error"]["details"][0]["loc"] == "query.status"
    await api.put(f"/executions/{waiting['id']}", json={"status": "cancelled"})


async def test_timers_say_when_a_sleep_wakes_and_a_wait_times_out(api):
    agent = (await create_agent(api))["id"]
    sleeping = await start(api, (await create_task(api, agent, SLEEPS))["id"])
    waiting = await start(api, (await create_task(api, agent, WAITS))["id"])
    await wait_for_status(api, waiting["id"], {"awaiting_input"})
    for execution, seconds in ((sleeping, 7200), (waiting, 3600)):
        timers = await _timers_once_started(api, execution["id"])
        assert [t["seconds"] for t in timers] == [seconds]
        started, fires = (datetime.fromisoformat(timers[0][k]) for k in ("started_at", "fires_at"))
        assert fires - started == timedelta(seconds=seconds)
        await api.put(f"/executions/{execution['id']}", json={"status": "cancelled"})
        await wait_for_status(api, execution["id"])
        assert (await api.get(f"/executions/{execution['id']}/timers")).json() == {"items": []}


async def test_saving_a_task_unchanged_keeps_its_version(api):
    agent = (await create_agent(api))["id"]
    task = await create_task(api, agent, TINY)
    again = await api.post(f"/agents/{agent}/tasks/{task['id']}", json=TINY)
    assert again.status_code == 201 and again.json()["version"] == 1  # create-or-update: 201, as on Julep
    assert again.json()["updated_at"] == task["updated_at"]
    put = await api.put(f"/tasks/{task['id']}", json=TINY)
    assert put.json()["version"] == 1
    # `true` and `1` are equal to Python, not as a task: a change of type is a new version.
    changed = {"name": "tiny", "main": [{"evaluate": {"x": True}}]}
    assert (await api.put(f"/tasks/{task['id']}", json=changed)).json()["version"] == 2
    retyped = {"name": "tiny", "main": [{"evaluate": {"x": 1}}]}
    assert (await api.put(f"/tasks/{task['id']}", json=retyped)).json()["version"] == 3
    assert (await api.put(f"/tasks/{task['id']}", json=retyped)).json()["version"] == 3
    # The same document under another agent moves the task: a new version.
    other = (await create_agent(api, "other"))["id"]
    assert (await api.post(f"/agents/{other}/tasks/{task['id']}", json=retyped)).json()["version"] == 4


async def _timers_once_started(api, execution_id: str) -> list[dict]:
    """The execution's timers, once its workflow has started one (a sleep writes no transition as it starts)."""

    async def poll() -> list[dict]:
        while not (timers := (await api.get(f"/executions/{execution_id}/timers")).json()["items"]):
            await asyncio.sleep(0.05)
        return timers

    return await asyncio.wait_for(poll(), timeout=60)
