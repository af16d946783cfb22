"""Schedules: a task run every few seconds, paused, triggered once by hand, then deleted; and a cron in a
timezone, with its next runs.

Run against a running Mint (`mint up`), from the repository:
    MINT_API_URL=http://127.0.0.1:8080 MINT_API_KEY=... python examples/schedule.py
It prints each run the schedule started (its execution, and the schedule it names in its metadata), and when
the weekday-morning cron fires next. The schedules also show on the Temporal UI's Schedules page.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import httpx

TASK = {
    "name": "heartbeat",
    "input_schema": {"type": "object", "properties": {"service": {"type": "string"}}},
    "main": [{"evaluate": {"checked": "$ _.service", "at": "$ datetime.datetime.now().isoformat()"}}],
}


async def _json(request: Any) -> Any:
    """The JSON of a request's answer (awaited here), which must be a success."""
    response = await request
    response.raise_for_status()
    return response.json()


async def _runs(api: httpx.AsyncClient, task_id: str, schedule_id: str) -> list[dict[str, Any]]:
    """The executions the schedule started, oldest first."""
    listed = await _json(api.get(f"/tasks/{task_id}/executions", params={"direction": "asc", "limit": 1000}))
    return [e for e in listed["items"] if e["metadata"].get("schedule_id") == schedule_id]


async def _until(api: httpx.AsyncClient, task_id: str, schedule_id: str, count: int) -> list[dict[str, Any]]:
    for _ in range(600):
        found = await _runs(api, task_id, schedule_id)
        if len(found) >= count:
            return found
        await asyncio.sleep(0.1)
    raise RuntimeError(f"the schedule did not start {count} runs within a minute")


async def main(api: httpx.AsyncClient) -> dict[str, Any]:
    """Schedule a task every 2 s, watch two runs, pause, trigger one run, delete; then a cron's next runs."""
    agent = await _json(api.post("/agents", json={"name": "scheduler"}))
    task = await _json(api.post(f"/agents/{agent['id']}/tasks", json=TASK))
    every = await _json(
        api.post(f"/tasks/{task['id']}/schedules", json={"every": "2s", "input": {"service": "billing"}})
    )
    fired = await _until(api, task["id"], every["id"], 2)
    await _json(api.patch(f"/schedules/{every['id']}", json={"paused": True}))
    paused_at = len(await _runs(api, task["id"], every["id"]))
    await _json(api.post(f"/schedules/{every['id']}/trigger"))  # one run now, though paused
    runs = await _until(api, task["id"], every["id"], paused_at + 1)
    await _json(api.delete(f"/schedules/{every['id']}"))

    cron = await _json(
        api.post(
            f"/tasks/{task['id']}/schedules",
            json={"cron": "0 9 * * 1-5", "timezone": "Europe/Paris", "input": {"service": "reports"}},
        )
    )
    await _json(api.delete(f"/schedules/{cron['id']}"))
    return {
        "schedule": every["id"],
        "fired": [run["id"] for run in fired[:2]],
        "runs": len(runs),
        "paused_at": paused_at,
        "cron_next_runs": cron["next_runs"],
    }


async def _run() -> None:
    url = os.environ.get("MINT_API_URL", "http://127.0.0.1:8080")
    headers = {"Authorization": f"Bearer {os.environ['MINT_API_KEY']}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as api:
        result = await main(api)
    print(f"schedule {result['schedule']} started executions {', '.join(result['fired'])}")
    print(f"paused after {result['paused_at']} runs; one triggered by hand made {result['runs']}")
    print("a weekday 9:00 Paris cron fires next at: " + ", ".join(result["cron_next_runs"]))


if __name__ == "__main__":
    asyncio.run(_run())
