"""`durability: run` (workflows/step_runs.py): consecutive pure and api_call steps run in one activity, and
the execution reads exactly as it does step by step: the same output, transitions, labels, state and
failures. A worker killed mid-run: tests/test_crash.py."""

import asyncio
import copy
import json
import re
import time

import pytest

from tests.helpers import create_agent, create_task, run_task, start, transitions, wait_for_status
from tests.local_http import LocalServer

DATE = re.compile(r'"date": "[^"]*"')  # an HTTP answer's Date header, in a call step's output


def echo(request):
    if request.path == "/slow":
        time.sleep(2)
    return 200, {}, request.path.encode()


def chain_task(url: str, durability: str | None, extra: dict | None = None) -> dict:
    """Calls with pure steps between them: labels, state, steps[] and log text all cross the run."""
    task = {
        "name": "a chain",
        "tools": [{"name": "echo", "type": "api_call", "api_call": {"url": url + "{{ arguments.n }}"}}],
        "main": [
            {"evaluate": {"n": "$ _['start']"}, "label": "first"},
            {"tool": "echo", "arguments": {"n": "$ _.n"}},
            {"set": {"seen": "$ [_.content]"}},
            {"tool": "echo", "arguments": {"n": "$ steps['first'].output.n + 1"}, "label": "second"},
            {"log": "got {{ _.content }}"},
            {"evaluate": {"both": "$ state.seen + [steps['second'].output.content]"}},
            {"get": "seen"},
            {"tool": "echo", "arguments": {"n": "$ len(_) + 40"}},
            {"evaluate": {"last": "$ _.content", "all": "$ [outputs[1].content, outputs[2]]"}},
        ],
        **(extra or {}),
    }
    if durability is not None:
        task["defaults"] = {"durability": durability}
    return task


def comparable(rows: list[dict]) -> list[tuple]:
    """What a transition says, without what differs between any two executions (ids, times, scopes)."""
    return [
        (
            r["type"],
            DATE.sub("", json.dumps(r["output"])),
            r["current"]["workflow"],
            r["current"]["step"],
            (r["next"] or {}).get("step"),
            r["step_label"],
            r["metadata"],
        )
        for r in rows
    ]


async def test_a_run_reads_exactly_as_the_same_steps_one_by_one(api):
    with LocalServer(echo) as server:
        alone, alone_rows = await run_task(api, chain_task(server.url, None), {"start": 1})
        run, run_rows = await run_task(api, chain_task(server.url, "run"), {"start": 1})
    assert alone["status"] == run["status"] == "succeeded", (alone["error"], run["error"])
    assert run["output"] == alone["output"] == {"last": "/41", "all": ["/1", {"seen": ["/1"]}]}
    assert comparable(run_rows) == comparable(alone_rows)
    assert run["transition_count"] == alone["transition_count"] == len(alone_rows)
    keys = [r.headers["Idempotency-Key"] for r in server.requests]
    assert len(set(keys)) == len(keys) == 6


async def test_a_run_of_steps_is_one_activity_in_the_history(api, temporal_env):
    """Three calls step by step are three local activities; in a run, one."""
    markers = []
    with LocalServer(echo) as server:
        for durability in (None, "run"):
            execution, _ = await run_task(api, chain_task(server.url, durability), {"start": 1})
            handle = temporal_env.client.get_workflow_handle(execution["id"])
            history = await handle.fetch_history()
            markers.append(sum(e.HasField("marker_recorded_event_attributes") for e in history.events))
    assert markers[1] == markers[0] - 2, markers


async def test_a_step_that_fails_in_a_run_fails_as_it_does_alone(api):
    with LocalServer(echo) as server:
        for broken in ({"evaluate": {"x": "$ 1 / 0"}}, {"tool": "echo", "arguments": {"n": "$ _['nope']"}}):
            errors = []
            for durability in (None, "run"):
                task = chain_task(server.url, durability)
                task["main"] = copy.deepcopy(task["main"])
                task["main"].insert(3, broken)
                execution, rows = await run_task(api, task, {"start": 1})
                assert execution["status"] == "failed"
                errors.append((execution["error"], comparable(rows)))
            assert errors[0] == errors[1]


async def test_a_call_that_fails_its_last_attempt_in_a_run_fails_as_it_does_alone(api):
    slow = {
        "tool": "echo",
        "arguments": {"n": "slow"},
        "timeout": 0.5,
        "retry": {"max_attempts": 2, "initial_interval": 0.1},
    }
    with LocalServer(echo) as server:
        errors = []
        for durability in (None, "run"):
            task = chain_task(server.url, durability)
            task["main"].insert(4, slow)
            execution, rows = await run_task(api, task, {"start": 1})
            assert execution["status"] == "failed"
            errors.append((execution["error"], comparable(rows)))
    assert "timed out after 0.5 s, attempt 2 of 2" in errors[0][0]
    assert errors[0] == errors[1]


@pytest.mark.parametrize(
    "defaults",
    [{"durability": "run"}, {}, {"local": False}],
    ids=["run", "call in the worker", "queued call"],
)
async def test_a_cancel_mid_call_ends_the_execution_cancelled_after_the_steps_it_recorded(api, defaults):
    """The run (or the call) stops where it is, and the execution ends `cancelled`, not failed: its
    `cancelled` transition follows every transition written before."""
    slowly = lambda request: (time.sleep(0.2), (200, {}, request.path.encode()))[1]  # noqa: E731
    task = {
        "name": "a long run",
        "defaults": defaults,
        "tools": [{"name": "echo", "type": "api_call", "api_call": {"url": "{{ arguments.url }}"}}],
        "main": [{"tool": "echo", "arguments": {"url": f"$ inputs[0]['url'] + '{i}'"}} for i in range(40)],
    }
    with LocalServer(slowly) as server:
        agent = await create_agent(api)
        created = await create_task(api, agent["id"], task)
        execution = await start(api, created["id"], {"url": server.url})
        while len(server.requests) < 4:
            await asyncio.sleep(0.02)
        await api.put(f"/executions/{execution['id']}", json={"status": "cancelled"})
        done = await wait_for_status(api, execution["id"])
        made = len(server.requests)
        await asyncio.sleep(0.6)  # three more calls, had it gone on
        assert len(server.requests) <= made + 1 and made < 40
    assert done["status"] == "cancelled", done["error"]
    rows = await transitions(api, execution["id"])
    assert rows[-1]["type"] == "cancelled"
    assert done["transition_count"] == len(rows)
    steps = [r for r in rows if r["type"] == "step"]
    assert 3 <= len(steps) < 40
    assert [r["current"]["step"] for r in steps] == list(range(len(steps)))
