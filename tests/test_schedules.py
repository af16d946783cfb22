"""Schedules on Temporal Schedules, against the real stack (the dev server: the time-skipping test server has
no schedules): firing, pausing, triggering and deleting; cron and timezone; the pinned task version; bad
specs refused at the edge; tenancy; the task's deletion; the `mint schedule` commands."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import typing
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest
from temporalio import activity, workflow
from temporalio.client import WorkflowExecutionStatus
from temporalio.service import RPCError

from contracts.schedules import SCHEDULE_ACTIVITIES, SCHEDULE_WORKFLOWS
from process.scheduled_runs import ScheduledRuns
from tests.helpers import api_client, create_agent, create_task, wait_for_status
from workflows.scheduled import ScheduledRunWorkflow

TASK = {"name": "tick", "main": [{"evaluate": {"version": "$ 1", "got": "$ _"}}]}
EXAMPLES = Path(__file__).parent.parent / "examples"


async def _task(api: httpx.AsyncClient, task: dict[str, Any] = TASK) -> dict[str, Any]:
    agent = await create_agent(api)
    return await create_task(api, agent["id"], task)


async def _schedule(api: httpx.AsyncClient, task_id: str, **body: Any) -> dict[str, Any]:
    response = await api.post(f"/tasks/{task_id}/schedules", json=body)
    assert response.status_code == 201, response.text
    return response.json()


async def _runs(api: httpx.AsyncClient, task_id: str, schedule_id: str) -> list[dict[str, Any]]:
    """The executions the schedule started, oldest first."""
    response = await api.get(f"/tasks/{task_id}/executions", params={"limit": 1000, "direction": "asc"})
    assert response.status_code == 200, response.text
    return [e for e in response.json()["items"] if e["metadata"].get("schedule_id") == schedule_id]


async def _wait_runs(
    api: httpx.AsyncClient, task_id: str, schedule_id: str, count: int, timeout: float = 60
) -> list[dict[str, Any]]:
    deadline = asyncio.get_running_loop().time() + timeout
    while len(found := await _runs(api, task_id, schedule_id)) < count:
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{len(found)} runs, not {count}, within {timeout} s")
        await asyncio.sleep(0.2)
    return found


async def test_a_schedule_fires_is_paused_triggered_and_deleted(api, temporal_env):
    task = await _task(api)
    created = await _schedule(api, task["id"], every="2s", input={"n": 1})
    assert created["task_id"] == task["id"] and created["every"] == "2s" and created["overlap"] == "skip"
    assert created["task_version"] == 1 and created["paused"] is False
    runs = [datetime.fromisoformat(t) for t in created["next_runs"]]
    assert len(runs) == 5 and all((b - a).total_seconds() == 2 for a, b in zip(runs, runs[1:], strict=False))
    # On Temporal: the schedule the Temporal UI's Schedules page lists.
    handle = temporal_env.client.get_schedule_handle(created["temporal_schedule_id"])
    assert (await handle.describe()).id == f"schedule-{created['id']}"

    fired = await _wait_runs(api, task["id"], created["id"], 2)
    for execution in fired[:2]:
        done = await wait_for_status(api, execution["id"])
        assert done["status"] == "succeeded", done
        assert done["input"] == {"n": 1} and done["output"]["got"] == {"n": 1}

    paused = await api.patch(f"/schedules/{created['id']}", json={"paused": True})
    assert paused.status_code == 200, paused.text
    assert paused.json()["paused"] is True and paused.json()["next_runs"] == []
    count = len(await _runs(api, task["id"], created["id"]))
    await asyncio.sleep(5)  # two and a half periods
    assert len(await _runs(api, task["id"], created["id"])) == count

    triggered = await api.post(f"/schedules/{created['id']}/trigger")
    assert triggered.status_code == 202, triggered.text
    after = await _wait_runs(api, task["id"], created["id"], count + 1)
    await asyncio.sleep(3)
    assert len(await _runs(api, task["id"], created["id"])) == count + 1  # one run, and still paused
    assert (await wait_for_status(api, after[-1]["id"]))["status"] == "succeeded"

    listed = (await api.get(f"/tasks/{task['id']}/schedules")).json()["items"]
    assert [s["id"] for s in listed] == [created["id"]]
    deleted = await api.delete(f"/schedules/{created['id']}")
    assert deleted.status_code == 202, deleted.text
    assert (await api.get(f"/schedules/{created['id']}")).status_code == 404
    with pytest.raises(RPCError):
        await handle.describe()
    assert (await api.get(f"/tasks/{task['id']}/schedules")).json()["items"] == []


async def test_cron_in_a_timezone_says_its_next_runs(api):
    task = await _task(api)
    created = await _schedule(api, task["id"], cron="0 9 * * 1-5", timezone="Europe/Paris")
    assert created["cron"] == "0 9 * * 1-5" and created["timezone"] == "Europe/Paris"
    runs = [datetime.fromisoformat(t).astimezone(ZoneInfo("Europe/Paris")) for t in created["next_runs"]]
    assert len(runs) == 5 and runs == sorted(runs)
    assert all((r.hour, r.minute, r.second) == (9, 0, 0) and r.isoweekday() <= 5 for r in runs)
    again = (await api.get(f"/schedules/{created['id']}")).json()
    assert again["next_runs"] == created["next_runs"]
    # Changed to an interval: the cron and its timezone go.
    changed = await api.patch(f"/schedules/{created['id']}", json={"every": "1h", "overlap": "allow_all"})
    assert changed.status_code == 200, changed.text
    body = changed.json()
    assert (body["cron"], body["timezone"], body["every"], body["overlap"]) == (None, None, "1h", "allow_all")
    first, second = (datetime.fromisoformat(t) for t in body["next_runs"][:2])
    assert (second - first).total_seconds() == 3600
    assert (await api.delete(f"/schedules/{created['id']}")).status_code == 202


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"cron": "61 * * * *"}, "cron"),
        ({"cron": "* * *"}, "cron"),
        ({"cron": "0 9 * * mon-fri/0"}, "cron"),
        ({"cron": "0 9 * * *", "timezone": "Mars/Olympus"}, "timezone"),
        ({"every": "soon"}, "every"),
        ({"every": "0s"}, "every"),
        ({"every": "30s", "overlap": "sometimes"}, "overlap"),
        ({"every": "30s", "catchup_window": "1s"}, "catchup_window"),
        ({"every": "30s", "cron": "0 9 * * *"}, "cron"),
        ({}, "cron"),
        ({"every": "30s", "timezone": "Nowhere"}, "timezone"),
        ({"every": "30s", "paused": "maybe"}, "paused"),
    ],
)
async def test_a_bad_spec_is_a_422_naming_its_field(api, body, field):
    task = await _task(api)
    response = await api.post(f"/tasks/{task['id']}/schedules", json=body)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert any(d["loc"].split(".")[-1] == field for d in error["details"]), error
    assert (await api.get(f"/tasks/{task['id']}/schedules")).json()["items"] == []


async def test_an_input_the_task_refuses_is_refused_when_the_schedule_is_made(api):
    task = await _task(api, {**TASK, "input_schema": {"type": "object", "required": ["n"]}})
    response = await api.post(f"/tasks/{task['id']}/schedules", json={"every": "1h", "input": {}})
    assert response.status_code == 422 and "input_schema" in response.text


async def test_the_task_version_is_pinned_until_latest(api):
    agent = await create_agent(api)
    task = await create_task(api, agent["id"], TASK)
    created = await _schedule(api, task["id"], every="1h", paused=True)
    assert created["paused"] is True and created["next_runs"] == []
    second = {**TASK, "main": [{"evaluate": {"version": "$ 2"}}]}
    updated = await api.post(f"/agents/{agent['id']}/tasks/{task['id']}", json=second)
    assert updated.status_code in (200, 201), updated.text
    assert (await api.post(f"/schedules/{created['id']}/trigger")).status_code == 202
    (first,) = await _wait_runs(api, task["id"], created["id"], 1)
    done = await wait_for_status(api, first["id"])
    assert (done["task_version"], done["output"]["version"]) == (1, 1)

    latest = await api.patch(f"/schedules/{created['id']}", json={"task_version": "latest"})
    assert latest.status_code == 200 and latest.json()["task_version"] == "latest", latest.text
    assert latest.json()["paused"] is True
    assert (await api.post(f"/schedules/{created['id']}/trigger")).status_code == 202
    runs = await _wait_runs(api, task["id"], created["id"], 2)
    done = await wait_for_status(api, runs[-1]["id"])
    assert (done["task_version"], done["output"]) == (2, {"version": 2})
    missing = await api.patch(f"/schedules/{created['id']}", json={"task_version": 7})
    assert missing.status_code == 422 and "no version 7" in missing.text


async def test_another_developer_gets_404_for_every_schedule_route(api, stack, store):
    task = await _task(api)
    created = await _schedule(api, task["id"], every="1h", paused=True)
    _, other_key = await store.create_developer("other")
    async with api_client(stack.url, other_key) as other:
        sid, tid = created["id"], task["id"]
        answers = [
            await other.get(f"/schedules/{sid}"),
            await other.patch(f"/schedules/{sid}", json={"paused": False}),
            await other.post(f"/schedules/{sid}/trigger"),
            await other.delete(f"/schedules/{sid}"),
            await other.get(f"/tasks/{tid}/schedules"),
            await other.post(f"/tasks/{tid}/schedules", json={"every": "1h"}),
        ]
        assert [a.status_code for a in answers] == [404] * 6, [a.text for a in answers]
    still = (await api.get(f"/schedules/{sid}")).json()
    assert still["paused"] is True and still["every"] == "1h"
    await asyncio.sleep(0.5)
    assert await _runs(api, tid, sid) == []  # the trigger refused did not run
    assert (await api.get("/schedules/not-an-id")).status_code == 404


async def test_deleting_the_task_deletes_its_schedules(api, temporal_env):
    task = await _task(api)
    created = await _schedule(api, task["id"], every="1h")
    assert (await api.delete(f"/tasks/{task['id']}")).status_code == 202
    assert (await api.get(f"/schedules/{created['id']}")).status_code == 404
    with pytest.raises(RPCError):
        await temporal_env.client.get_schedule_handle(created["temporal_schedule_id"]).describe()


def test_the_firings_functions_are_typed_as_their_contract():
    def signature(function: Any) -> tuple[Any, Any]:
        hints = typing.get_type_hints(function)
        returned = hints.pop("return")
        argument = next(iter(hints.values()), None)  # the workflow takes none
        return argument, None if returned is type(None) else returned

    functions = [
        ScheduledRuns.launch_scheduled_run,
        ScheduledRuns.await_scheduled_run,
        ScheduledRuns.cancel_scheduled_run,
        ScheduledRuns.scheduled_run_ended,
    ]
    found = {activity._Definition.must_from_callable(f).name: signature(f) for f in functions}
    assert found == SCHEDULE_ACTIVITIES
    definition = workflow._Definition.must_from_class(ScheduledRunWorkflow)
    assert {definition.name: signature(definition.run_fn)} == SCHEDULE_WORKFLOWS


def _mint(*args: str, url: str, key: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MINT_API_URL": url, "MINT_API_KEY": key}
    return subprocess.run(
        [sys.executable, "-m", "process.cli", "schedule", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


async def test_the_mint_schedule_commands(api, stack, api_key):
    task = await _task(api)

    def mint(*args: str) -> subprocess.CompletedProcess[str]:
        return _mint(*args, url=stack.url, key=api_key)

    made = await asyncio.to_thread(
        mint, "create", task["id"], "--cron", "30 8 * * *", "--timezone", "Asia/Tokyo", "--input", "{n: 2}"
    )
    assert made.returncode == 0, made.stderr
    (schedule,) = (await api.get(f"/tasks/{task['id']}/schedules")).json()["items"]
    assert schedule["id"] in made.stdout and schedule["input"] == {"n": 2}
    listed = await asyncio.to_thread(mint, "ls", task["id"])
    assert schedule["id"] in listed.stdout and "30 8 * * * (Asia/Tokyo)" in listed.stdout, listed.stdout
    paused = await asyncio.to_thread(mint, "pause", schedule["id"])
    assert paused.returncode == 0 and (await api.get(f"/schedules/{schedule['id']}")).json()["paused"]
    resumed = await asyncio.to_thread(mint, "resume", schedule["id"])
    assert resumed.returncode == 0 and not (await api.get(f"/schedules/{schedule['id']}")).json()["paused"]
    triggered = await asyncio.to_thread(mint, "trigger", schedule["id"])
    assert triggered.returncode == 0, triggered.stderr
    await _wait_runs(api, task["id"], schedule["id"], 1)
    removed = await asyncio.to_thread(mint, "rm", schedule["id"])
    assert removed.returncode == 0 and (await api.get(f"/schedules/{schedule['id']}")).status_code == 404
    bad = await asyncio.to_thread(mint, "create", task["id"], "--every", "soon")
    assert bad.returncode == 3 and "every" in bad.stderr, bad.stderr
    gone = await asyncio.to_thread(mint, "pause", schedule["id"])
    assert gone.returncode == 3 and "not found" in gone.stderr


async def test_the_schedule_example_runs(api):
    import importlib.util

    spec = importlib.util.spec_from_file_location("schedule_example", EXAMPLES / "schedule.py")
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    result = await example.main(api)
    assert len(result["fired"]) == 2 and result["runs"] == result["paused_at"] + 1
    assert len(result["cron_next_runs"]) == 5
    for execution_id in result["fired"]:
        done = await wait_for_status(api, execution_id)
        assert done["status"] == "succeeded" and done["output"]["checked"] == "billing", done
        assert done["metadata"] == {"schedule_id": result["schedule"]}


async def test_cancel_other_cancels_the_run_still_going(api):
    task = await _task(api, {"name": "slow", "main": [{"sleep": {"seconds": 600}}]})
    created = await _schedule(api, task["id"], every="2s", overlap="cancel_other")
    runs = await _wait_runs(api, task["id"], created["id"], 2)
    first = await wait_for_status(api, runs[0]["id"], {"cancelled"}, timeout=30)
    assert "cancel_other" in (first["error"] or ""), first
    assert (await api.patch(f"/schedules/{created['id']}", json={"paused": True})).status_code == 200
    assert (await api.delete(f"/schedules/{created['id']}")).status_code == 202
    for run in await _runs(api, task["id"], created["id"]):
        if run["status"] not in ("cancelled", "succeeded", "failed"):
            await api.put(f"/executions/{run['id']}", json={"status": "cancelled"})


async def test_a_firing_replays_in_the_strict_sandbox(api, store, temporal_env):
    from temporalio.worker import Replayer

    from infra.temporal.payload_codec import data_converter
    from process.worker import workflow_runner
    from tests.stack import TEST_ENCRYPTION_KEY

    task = await _task(api)
    created = await _schedule(api, task["id"], every="1h", paused=True)
    assert (await api.post(f"/schedules/{created['id']}/trigger")).status_code == 202
    (run,) = await _wait_runs(api, task["id"], created["id"], 1)
    await wait_for_status(api, run["id"])
    client = temporal_env.client
    query = f"WorkflowId STARTS_WITH '{created['temporal_schedule_id']}'"
    for _ in range(100):  # visibility follows the start by a moment
        if found := [w async for w in client.list_workflows(query)]:
            break
        await asyncio.sleep(0.1)
    assert len(found) == 1
    handle = client.get_workflow_handle(found[0].id)
    while (await handle.describe()).status == WorkflowExecutionStatus.RUNNING:
        await asyncio.sleep(0.1)
    replayer = Replayer(
        workflows=[ScheduledRunWorkflow],
        workflow_runner=workflow_runner(strict=True),
        data_converter=data_converter(store.pool, keys=(TEST_ENCRYPTION_KEY,)),
    )
    result = await replayer.replay_workflow(await handle.fetch_history(), raise_on_replay_failure=False)
    assert result.replay_failure is None, result.replay_failure


async def test_a_patch_changes_spec_and_pause_together_or_nothing(api):
    task = await _task(api)
    created = await _schedule(api, task["id"], cron="0 9 * * *")
    bad = await api.patch(f"/schedules/{created['id']}", json={"cron": "0 25 * * *", "paused": True})
    assert bad.status_code == 422 and bad.json()["error"]["details"][0]["loc"].endswith("cron"), bad.text
    unchanged = (await api.get(f"/schedules/{created['id']}")).json()
    assert unchanged["cron"] == "0 9 * * *" and unchanged["paused"] is False
    both = await api.patch(f"/schedules/{created['id']}", json={"every": "10m", "paused": True})
    assert both.status_code == 200, both.text
    assert (both.json()["every"], both.json()["paused"], both.json()["next_runs"]) == ("10m", True, [])
    resumed = (await api.patch(f"/schedules/{created['id']}", json={"paused": False})).json()
    first, second = (datetime.fromisoformat(t) for t in resumed["next_runs"][:2])
    assert resumed["paused"] is False and (second - first).total_seconds() == 600
    assert (await api.delete(f"/schedules/{created['id']}")).status_code == 202


async def test_a_long_run_is_polled_holding_no_slot(api, temporal_env, monkeypatch):
    import workflows.scheduled as scheduled

    # The stack's worker runs in this process and shares the workflows package (process/worker.py), so a
    # run is waited for in the worker for 1 s here, then polled every second.
    monkeypatch.setattr(scheduled, "IN_WORKER_WAIT", timedelta(seconds=1))
    monkeypatch.setattr(scheduled, "FIRST_POLL", timedelta(seconds=1))
    task = await _task(
        api, {"name": "slowish", "main": [{"sleep": {"seconds": 4}}, {"return": {"ok": True}}]}
    )
    created = await _schedule(api, task["id"], every="1h", paused=True)
    assert (await api.post(f"/schedules/{created['id']}/trigger")).status_code == 202
    (run,) = await _wait_runs(api, task["id"], created["id"], 1)
    assert (await wait_for_status(api, run["id"]))["status"] == "succeeded"
    client = temporal_env.client
    query = f"WorkflowId STARTS_WITH '{created['temporal_schedule_id']}'"
    for _ in range(100):
        if found := [w async for w in client.list_workflows(query)]:
            break
        await asyncio.sleep(0.1)
    handle = client.get_workflow_handle(found[0].id)
    for _ in range(200):
        if (await handle.describe()).status != WorkflowExecutionStatus.RUNNING:
            break
        await asyncio.sleep(0.1)
    assert (await handle.describe()).status == WorkflowExecutionStatus.COMPLETED
    names = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        async for e in handle.fetch_history_events()
        if e.HasField("activity_task_scheduled_event_attributes")
    ]
    assert names[:2] == ["launch_scheduled_run", "await_scheduled_run"] and "scheduled_run_ended" in names


@pytest.mark.parametrize(
    "bad", ["not-a-uuid", "1; DROP TABLE schedules", "6f1c3d0e-1111-4222-8333-944445555666"]
)
async def test_missing_ids_are_404(api, bad):
    routes = [
        ("GET", f"/tasks/{bad}/schedules", None),
        ("POST", f"/tasks/{bad}/schedules", {"every": "30s"}),
        ("GET", f"/schedules/{bad}", None),
        ("PATCH", f"/schedules/{bad}", {"paused": True}),
        ("POST", f"/schedules/{bad}/trigger", None),
        ("DELETE", f"/schedules/{bad}", None),
    ]
    for method, route, body in routes:
        response = await api.request(method, route, json=body)
        assert response.status_code == 404 and "not found" in response.text, (route, response.text)
