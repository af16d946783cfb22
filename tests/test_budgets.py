"""Budgets (issue 17 item 6): executions and chats stop with BudgetExceeded before the call that would pass
the limit, through the HTTP API on the real stack with the scripted model."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.helpers import create_agent, create_task, run_task, start, wait_for_status
from tests.model_server import Call, Reply


def _error_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    (row,) = [r for r in rows if r["type"] == "error"]
    return row


async def test_max_model_calls_refuses_the_next_call(mapi, model_server):
    task = {
        "name": "two prompts",
        "budget": {"max_model_calls": 1},
        "main": [{"prompt": "first", "unwrap": True}, {"prompt": "second", "unwrap": True}],
    }
    execution, rows = await run_task(mapi, task)
    assert execution["status"] == "failed"
    assert execution["error"].startswith("BudgetExceeded: "), execution["error"]
    assert "max_model_calls" in execution["error"]
    assert _error_row(rows)["metadata"]["error_type"] == "BudgetExceeded"
    assert [c.messages[-1]["content"] for c in model_server.calls] == ["first"]  # the second was never made
    assert [r["output"] for r in rows if r["type"] == "step"] == ["echo: first"]


async def test_a_budget_that_is_not_reached_changes_nothing(mapi, model_server):
    task = {
        "name": "within budget",
        "budget": {"max_model_calls": 2, "max_tokens": 10_000, "max_cost_usd": 1.0},
        "main": [{"prompt": "first", "unwrap": True}, {"prompt": "second", "unwrap": True}],
    }
    execution, _ = await run_task(mapi, task)
    assert execution["status"] == "succeeded", execution["error"]
    assert len(model_server.calls) == 2


async def test_max_tokens_counts_the_calls_of_a_maps_child_workflows(
    mapi, script, model_server, temporal_env
):
    # 251 items of one model call each run in two child workflows (chunks of 250), one after another
    # (parallelism 1). Each call uses 2 tokens: the first child's 250 calls reach the 500 allowed, so the
    # second child's one call, in another workflow, is refused.
    script.reply = lambda call: Reply(content="ok", prompt_tokens=1, completion_tokens=1)
    task = {
        "name": "wide prompts",
        "budget": {"max_tokens": 500},
        "main": [{"over": "$ list(range(251))", "map": {"prompt": "$ str(_)"}, "parallelism": 1}],
    }
    execution, rows = await run_task(mapi, task)
    assert execution["status"] == "failed"
    assert execution["error"].startswith("BudgetExceeded: "), execution["error"]
    assert "500 tokens" in execution["error"]
    assert _error_row(rows)["metadata"]["error_type"] == "BudgetExceeded"
    assert len(model_server.calls) == 250
    history = await temporal_env.client.get_workflow_handle(execution["id"]).fetch_history()
    children = [
        e for e in history.events if e.HasField("start_child_workflow_execution_initiated_event_attributes")
    ]
    assert len(children) == 2  # the refused call was the second child's


def _allow_or_echo(call: Call) -> Reply:
    """The model: a guardrail's call (JSON under a schema) is allowed, any other gets the echo."""
    if (call.body.get("response_format") or {}).get("type") == "json_schema":
        return Reply(content=json.dumps({"allowed": True, "reason": "fine"}))
    return Reply(content=f"echo: {call.messages[-1]['content']}")


JUDGE = {"name": "judge", "prompt": "Is {{ _ }} fine?", "model": "gpt-4o-mini"}


async def test_a_prompt_guardrails_model_call_counts_against_the_budget(mapi, script, model_server):
    script.reply = _allow_or_echo
    task = {
        "name": "guarded",
        "budget": {"max_model_calls": 1},
        "guardrails": {"input": [JUDGE]},
        "main": [{"prompt": "hi", "unwrap": True}],
    }
    execution, rows = await run_task(mapi, task, {"q": 1})
    assert execution["status"] == "failed"
    assert execution["error"].startswith("BudgetExceeded: "), execution["error"]
    (call,) = model_server.calls  # the guardrail's verdict used the one call allowed
    assert call.body["response_format"]["type"] == "json_schema"
    assert _error_row(rows)["metadata"]["error_type"] == "BudgetExceeded"


async def _session(
    api: httpx.AsyncClient, budget: dict[str, Any] | None = None, **agent_fields: Any
) -> dict[str, Any]:
    response = await api.post("/agents", json={"name": "tester", **agent_fields})
    assert response.status_code == 201, response.text
    agent = response.json()
    body: dict[str, Any] = {"agent": agent["id"]}
    if budget is not None:
        body["budget"] = budget
    response = await api.post("/sessions", json=body)
    assert response.status_code == 201, response.text
    return response.json()


async def _chat(api: httpx.AsyncClient, session_id: str, text: str) -> httpx.Response:
    return await api.post(
        f"/sessions/{session_id}/chat", json={"messages": [{"role": "user", "content": text}]}
    )


async def test_a_sessions_budget_covers_its_chats(mapi, model_server):
    session = await _session(mapi, {"max_model_calls": 2})
    assert session["budget"] == {"max_model_calls": 2, "max_tokens": None, "max_cost_usd": None}
    for text in ("one", "two"):
        answer = await _chat(mapi, session["id"], text)
        assert answer.status_code == 200, answer.text
    refused = await _chat(mapi, session["id"], "three")
    assert refused.status_code == 402, refused.text
    assert refused.json()["type"] == "BudgetExceeded"
    assert refused.json()["error"].startswith("BudgetExceeded: ")
    assert len(model_server.calls) == 2
    history = (await mapi.get(f"/sessions/{session['id']}/history")).json()
    assert "three" not in str(history)  # a refused chat saves nothing


async def test_a_sessions_token_budget_refuses_once_reached(mapi, script, model_server):
    script.reply = lambda call: Reply(content="ok", prompt_tokens=30, completion_tokens=20)
    session = await _session(mapi, {"max_tokens": 100})
    assert (await _chat(mapi, session["id"], "one")).status_code == 200  # 50 tokens
    assert (await _chat(mapi, session["id"], "two")).status_code == 200  # 100: reached
    refused = await _chat(mapi, session["id"], "three")
    assert refused.status_code == 402 and refused.json()["type"] == "BudgetExceeded", refused.text
    assert "100 tokens" in refused.json()["error"]
    assert len(model_server.calls) == 2


async def test_a_chats_guardrail_calls_count_against_the_sessions_budget(mapi, script, model_server):
    script.reply = _allow_or_echo
    session = await _session(mapi, {"max_model_calls": 2}, guardrails={"output": [JUDGE]})
    answer = await _chat(mapi, session["id"], "one")  # the answer and its output guardrail's verdict
    assert answer.status_code == 200, answer.text
    assert answer.json()["usage"]["total_tokens"] > 0
    refused = await _chat(mapi, session["id"], "two")
    assert refused.status_code == 402 and refused.json()["type"] == "BudgetExceeded", refused.text
    assert len(model_server.calls) == 2


async def test_the_developers_default_budget_applies_where_none_is_set(mapi, model_server):
    assert (await mapi.get("/developer/settings")).json() == {"default_budget": None}
    changed = await mapi.put("/developer/settings", json={"default_budget": {"max_model_calls": 0}})
    assert changed.status_code == 200, changed.text
    assert changed.json()["default_budget"]["max_model_calls"] == 0

    agent = await create_agent(mapi)
    plain = await create_task(mapi, agent["id"], {"name": "plain", "main": [{"prompt": "hi"}]})
    done = await wait_for_status(mapi, (await start(mapi, plain["id"]))["id"])
    assert done["error"].startswith("BudgetExceeded: "), done
    own = {"name": "own", "budget": {"max_model_calls": 1}, "main": [{"prompt": "hi", "unwrap": True}]}
    execution, _ = await run_task(mapi, own, agent_id=agent["id"])
    assert execution["status"] == "succeeded", execution["error"]  # the task's own budget wins

    session = await _session(mapi)
    refused = await _chat(mapi, session["id"], "hello")
    assert refused.status_code == 402 and refused.json()["type"] == "BudgetExceeded", refused.text
    assert len(model_server.calls) == 1

    await mapi.put("/developer/settings", json={"default_budget": None})
    assert (await _chat(mapi, session["id"], "hello")).status_code == 200


async def test_a_bad_budget_is_refused_with_its_path(mapi):
    agent = await create_agent(mapi)
    bad = {"name": "bad", "budget": {"max_model_calls": -1}, "main": [{"prompt": "hi"}]}
    response = await mapi.post(f"/agents/{agent['id']}/tasks", json=bad)
    assert response.status_code == 422, response.text
    assert "budget" in response.text and "max_model_calls" in response.text
    typo = await mapi.post("/sessions", json={"agent": agent["id"], "budget": {"max_calls": 1}})
    assert typo.status_code == 422, typo.text
    settings = await mapi.put("/developer/settings", json={"default_budget": {"max_tokens": "lots"}})
    assert settings.status_code == 422, settings.text
    huge = await mapi.post("/sessions", json={"agent": agent["id"], "budget": {"max_tokens": 10**30}})
    assert huge.status_code == 422, huge.text
    assert "max_tokens" in huge.text


async def test_the_budget_example(mapi, model_server):
    from pathlib import Path

    text = (Path(__file__).parent.parent / "examples" / "budget.yaml").read_text()
    agent = await create_agent(mapi)
    task = await create_task(mapi, agent["id"], text)
    two = await wait_for_status(mapi, (await start(mapi, task["id"], {"topics": ["a", "b"]}))["id"])
    assert two["status"] == "succeeded", two["error"]
    assert two["output"] == ["echo: One sentence about a.", "echo: One sentence about b."]
    three = await wait_for_status(mapi, (await start(mapi, task["id"], {"topics": ["a", "b", "c"]}))["id"])
    assert three["error"].startswith("BudgetExceeded: "), three
    assert len(model_server.calls) == 4
