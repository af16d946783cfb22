"""Typed waits addressed by id: a `wait_for_input` with a `schema` refuses a resume whose input does not
satisfy it (422 naming the path; the wait stays open); GET /executions/{id} lists the open waits; PUT answers
one of several by `wait_id`; `mint resume --wait` does the same. Each against the real stack."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from tests.helpers import create_agent, create_task, start, transitions, wait_for_status
from tests.model_server import Call, Reply

EXAMPLE = Path(__file__).parent.parent / "examples" / "typed_waits.yaml"
APPROVAL = {"type": "object", "required": ["approved"], "properties": {"approved": {"type": "boolean"}}}
ASKS = {
    "name": "asks",
    "main": [
        {"label": "approve", "wait_for_input": {"info": {"question": "$ 'Ship it?'"}, "schema": APPROVAL}},
        {"return": {"answer": "$ _"}},
    ],
}
BRANCHES = {
    "name": "two questions",
    "main": [
        {
            "parallel": [
                {"wait_for_input": {"info": "first", "schema": {"type": "string"}}},
                {"wait_for_input": {"info": "second", "schema": {"type": "integer"}}},
            ]
        }
    ],
}


async def _waits(api: httpx.AsyncClient, execution_id: str, count: int) -> list[dict[str, Any]]:
    """The execution's open waits once there are `count` of them."""
    for _ in range(600):
        execution = (await api.get(f"/executions/{execution_id}")).json()
        if execution["status"] == "awaiting_input" and len(execution["waits"]) == count:
            return list(execution["waits"])
        await asyncio.sleep(0.05)
    raise AssertionError(f"never saw {count} open waits: {execution}")


def _resume(value: Any, wait_id: str | None = None) -> dict[str, Any]:
    return {"status": "running", "input": value, **({"wait_id": wait_id} if wait_id else {})}


async def test_an_input_the_schema_refuses_is_a_422_naming_the_path_and_the_wait_stays_open(api):
    task = await create_task(api, (await create_agent(api))["id"], ASKS)
    execution_id = (await start(api, task["id"]))["id"]
    (wait,) = await _waits(api, execution_id, 1)
    rows = await transitions(api, execution_id)
    opened = next(r for r in rows if r["type"] == "wait")
    assert wait == {
        "id": opened["id"],
        "step": "approve",
        "info": {"question": "Ship it?"},
        "schema": APPROVAL,
        "opened_at": opened["created_at"],
    }

    refused = await api.put(f"/executions/{execution_id}", json=_resume({"approved": "yes"}))
    assert refused.status_code == 422, refused.text
    error = refused.json()["error"]
    assert [d["loc"] for d in error["details"]] == ["input['approved']"]
    assert "'yes' is not of type 'boolean'" in error["message"] and wait["id"] in error["message"]
    missing = await api.put(f"/executions/{execution_id}", json=_resume({}, wait["id"]))
    assert missing.status_code == 422 and "'approved' is a required property" in missing.text

    still = (await api.get(f"/executions/{execution_id}")).json()
    assert still["status"] == "awaiting_input" and still["waits"] == [wait]
    answered = await api.put(f"/executions/{execution_id}", json=_resume({"approved": True}, wait["id"]))
    assert answered.status_code == 200, answered.text
    done = await wait_for_status(api, execution_id)
    assert done["status"] == "succeeded" and done["output"] == {"answer": {"approved": True}}, done
    assert done["waits"] == []
    assert [r["type"] for r in await transitions(api, execution_id)].count("resume") == 1


async def test_waits_in_parallel_branches_are_answered_by_id_in_any_order(api, api_key, store):
    task = await create_task(api, (await create_agent(api))["id"], BRANCHES)
    execution_id = (await start(api, task["id"]))["id"]
    first, second = await _waits(api, execution_id, 2)
    # What a webhook sends (Store.open_waits, OpenWait.to_json) is what GET lists.
    developer = str(await store.developer_for_key(api_key))
    sent = [w.to_json() for w in await store.open_waits(developer, execution_id)]
    assert [{**w, "opened_at": datetime.fromisoformat(w["opened_at"])} for w in sent] == [
        {**w, "opened_at": datetime.fromisoformat(w["opened_at"])} for w in (first, second)
    ]
    assert (first["info"], first["step"]) == ("first", "main[0].parallel[0][0]")
    assert (second["info"], second["step"]) == ("second", "main[0].parallel[1][0]")
    assert first["opened_at"] <= second["opened_at"]

    # The newer wait first, by its id; its schema is checked, not the oldest's.
    wrong = await api.put(f"/executions/{execution_id}", json=_resume("two", second["id"]))
    assert wrong.status_code == 422 and wrong.json()["error"]["details"][0]["loc"] == "input"
    answered = await api.put(f"/executions/{execution_id}", json=_resume(2, second["id"]))
    assert answered.status_code == 200, answered.text
    assert await _waits(api, execution_id, 1) == [first]

    again = await api.put(f"/executions/{execution_id}", json=_resume(3, second["id"]))
    assert again.status_code == 409 and "already answered" in again.json()["error"]["message"]
    unknown = "00000000-0000-0000-0000-000000000000"
    nothing = await api.put(f"/executions/{execution_id}", json=_resume(3, unknown))
    assert nothing.status_code == 404 and first["id"] in nothing.json()["error"]["message"]

    await api.put(f"/executions/{execution_id}", json=_resume("one", first["id"]))
    done = await wait_for_status(api, execution_id)
    assert done["status"] == "succeeded" and done["output"] == ["one", 2], done


async def test_without_a_wait_id_the_oldest_open_wait_is_answered(api):
    task = await create_task(api, (await create_agent(api))["id"], BRANCHES)
    execution_id = (await start(api, task["id"]))["id"]
    first, second = await _waits(api, execution_id, 2)
    refused = await api.put(f"/executions/{execution_id}", json=_resume(1))  # the oldest takes a string
    assert refused.status_code == 422
    assert (await api.put(f"/executions/{execution_id}", json=_resume("one"))).status_code == 200
    assert await _waits(api, execution_id, 1) == [second]
    assert (await api.put(f"/executions/{execution_id}", json=_resume(2))).status_code == 200
    assert (await wait_for_status(api, execution_id))["output"] == ["one", 2]


async def test_a_schema_that_is_no_json_schema_is_refused_when_the_task_is_created(api):
    agent = (await create_agent(api))["id"]
    bad = {"name": "bad", "main": [{"wait_for_input": {"info": "x", "schema": {"type": "boolen"}}}]}
    response = await api.post(f"/agents/{agent}/tasks", json=bad)
    assert response.status_code == 422, response.text
    (problem,) = response.json()["error"]["details"]
    assert problem["loc"] == "main[0].wait_for_input.schema.type"
    plain = {"name": "plain", "main": [{"wait_for_input": {"info": "x"}}]}
    stored = await create_task(api, agent, plain)
    assert stored["main"] == [{"kind_": "wait_for_input", "wait_for_input": {"info": "x"}}]


async def test_another_developer_can_neither_see_nor_answer_a_wait(api, stack, store):
    task = await create_task(api, (await create_agent(api))["id"], ASKS)
    execution_id = (await start(api, task["id"]))["id"]
    (wait,) = await _waits(api, execution_id, 1)
    _, other_key = await store.create_developer("intruder")
    async with httpx.AsyncClient(
        base_url=stack.url, headers={"Authorization": f"Bearer {other_key}"}
    ) as other:
        assert (await other.get(f"/executions/{execution_id}")).status_code == 404
        answer = await other.put(f"/executions/{execution_id}", json=_resume({"approved": True}, wait["id"]))
        assert answer.status_code == 404, answer.text
        # B's own execution cannot be answered with A's wait id either.
        b_task = await create_task(other, (await create_agent(other))["id"], ASKS)
        b_execution = (await start(other, b_task["id"]))["id"]
        await _waits(other, b_execution, 1)
        crossed = await other.put(f"/executions/{b_execution}", json=_resume({"approved": True}, wait["id"]))
        assert crossed.status_code == 404, crossed.text
        await other.put(f"/executions/{b_execution}", json={"status": "cancelled"})
    assert (await api.get(f"/executions/{execution_id}")).json()["waits"] == [wait]
    await api.put(f"/executions/{execution_id}", json={"status": "cancelled"})


async def test_mint_resume_answers_the_wait_it_names(api, stack, api_key):
    task = await create_task(api, (await create_agent(api))["id"], BRANCHES)
    execution_id = (await start(api, task["id"]))["id"]
    first, second = await _waits(api, execution_id, 2)
    env = {**os.environ, "MINT_API_KEY": api_key}

    def mint(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "process.cli", *args, "--url", stack.url]
        return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)

    status = await asyncio.to_thread(mint, "status", execution_id)
    assert f"--wait {second['id']}" in status.stdout, status.stdout
    refused = await asyncio.to_thread(mint, "resume", execution_id, "--wait", second["id"], "--input", '"x"')
    assert refused.returncode != 0 and "input: 'x' is not of type 'integer'" in refused.stderr
    resumed = await asyncio.to_thread(mint, "resume", execution_id, "--wait", second["id"], "--input", "7")
    assert resumed.returncode == 0, resumed.stderr
    assert await _waits(api, execution_id, 1) == [first]
    await asyncio.to_thread(mint, "resume", execution_id, "--input", '"one"')
    assert (await wait_for_status(api, execution_id))["output"] == ["one", 7]


async def test_a_function_tool_call_is_an_open_wait_with_the_call_as_its_info(mapi, script):
    def model(call: Call) -> Reply:
        results = [m for m in call.messages if m["role"] == "tool"]
        if not results:
            return Reply(tool_calls=[("check_account", {"customer": "c-1"})])
        return Reply(content=f"status: {json.loads(results[0]['content'])['data']['status']}")

    script.reply = model
    tool = {"name": "check_account", "type": "function", "function": {"parameters": {"type": "object"}}}
    prompt = {"label": "ask", "prompt": "How is c-1?", "tools": "all", "auto_run_tools": True, "unwrap": True}
    task = {"name": "ask client", "tools": [tool], "main": [prompt]}
    created = await create_task(mapi, (await create_agent(mapi))["id"], task)
    execution_id = (await start(mapi, created["id"]))["id"]
    (wait,) = await _waits(mapi, execution_id, 1)
    assert wait["step"] == "ask" and wait["schema"] is None
    assert (wait["info"]["name"], wait["info"]["arguments"]) == ("check_account", {"customer": "c-1"})
    answered = await mapi.put(f"/executions/{execution_id}", json=_resume({"status": "active"}, wait["id"]))
    assert answered.status_code == 200, answered.text
    assert (await wait_for_status(mapi, execution_id))["output"] == "status: active"


async def test_the_example_takes_typed_answers_in_any_order(api):
    task = await create_task(api, (await create_agent(api))["id"], EXAMPLE.read_text())
    execution_id = (await start(api, task["id"], {"title": "Launch post"}))["id"]
    legal, finance = await _waits(api, execution_id, 2)
    assert (legal["step"], finance["step"]) == ("legal", "finance")
    assert finance["info"] == {"question": "What budget for 'Launch post'? Answer budget, a number"}
    negative = await api.put(f"/executions/{execution_id}", json=_resume({"budget": -1}, finance["id"]))
    assert negative.status_code == 422 and negative.json()["error"]["details"][0]["loc"] == "input['budget']"
    await api.put(f"/executions/{execution_id}", json=_resume({"budget": 1200}, finance["id"]))
    await api.put(f"/executions/{execution_id}", json=_resume({"approved": True}, legal["id"]))
    done = await wait_for_status(api, execution_id)
    assert done["output"] == {"title": "Launch post", "approved": True, "budget": 1200}, done


async def test_mint_run_asks_again_when_the_schema_refuses_an_answer(stack, api_key):
    env = {**os.environ, "MINT_API_KEY": api_key}
    command = [sys.executable, "-m", "process.cli", "run", str(EXAMPLE), "--url", stack.url]
    command += ["--input", '{"title": "Launch post"}']
    answers = "approved: maybe\napproved: true\nbudget: 300\n"
    run = await asyncio.to_thread(
        subprocess.run, command, input=answers, capture_output=True, text=True, timeout=120, env=env
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "input['approved']: 'maybe' is not of type 'boolean'" in run.stderr
    assert '"budget": 300' in run.stdout and '"approved": true' in run.stdout
