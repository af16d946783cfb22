"""Budgets: executions and chats stop with BudgetExceeded before the call that would pass
the limit, through the HTTP API on the real stack with the scripted model."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.models import _charged_execution
from contracts.temporal import MAP_CHUNK_WORKFLOW, RUN_TOOL_WORKFLOW, TASK_EXECUTION_WORKFLOW
from infra.store.budgets import Budgets, UnknownExecution
from tests.helpers import create_agent, create_task, run_task, start, wait_for_status
from tests.model_server import Call, Reply
from workflows.fan_out import CHUNK_ITEMS


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
        assert answer.status_code == 201, answer.text
    refused = await _chat(mapi, session["id"], "three")
    assert refused.status_code == 402, refused.text
    assert refused.json()["error"]["type"] == "BudgetExceeded"
    assert refused.json()["error"]["message"].startswith("BudgetExceeded: ")
    assert len(model_server.calls) == 2
    history = (await mapi.get(f"/sessions/{session['id']}/history")).json()
    assert "three" not in str(history)  # a refused chat saves nothing


async def test_a_sessions_token_budget_refuses_once_reached(mapi, script, model_server):
    script.reply = lambda call: Reply(content="ok", prompt_tokens=30, completion_tokens=20)
    session = await _session(mapi, {"max_tokens": 100})
    assert (await _chat(mapi, session["id"], "one")).status_code == 201  # 50 tokens
    assert (await _chat(mapi, session["id"], "two")).status_code == 201  # 100: reached
    refused = await _chat(mapi, session["id"], "three")
    assert refused.status_code == 402 and refused.json()["error"]["type"] == "BudgetExceeded", refused.text
    assert "100 tokens" in refused.json()["error"]["message"]
    assert len(model_server.calls) == 2


async def test_a_chats_guardrail_calls_count_against_the_sessions_budget(mapi, script, model_server):
    script.reply = _allow_or_echo
    session = await _session(mapi, {"max_model_calls": 2}, guardrails={"output": [JUDGE]})
    answer = await _chat(mapi, session["id"], "one")  # the answer and its output guardrail's verdict
    assert answer.status_code == 201, answer.text
    assert answer.json()["usage"]["total_tokens"] > 0
    refused = await _chat(mapi, session["id"], "two")
    assert refused.status_code == 402 and refused.json()["error"]["type"] == "BudgetExceeded", refused.text
    assert len(model_server.calls) == 2


async def test_the_developers_default_budget_applies_where_none_is_set(mapi, model_server):
    assert (await mapi.get("/developer/settings")).json()["default_budget"] is None
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
    assert refused.status_code == 402 and refused.json()["error"]["type"] == "BudgetExceeded", refused.text
    assert len(model_server.calls) == 1

    await mapi.put("/developer/settings", json={"default_budget": None})
    assert (await _chat(mapi, session["id"], "hello")).status_code == 201


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


# Every path that makes a model call, charged to the call ----------------------------------------------------

N = 3  # each row's budget: {max_model_calls: N}
BUDGET = {"max_model_calls": N}


@dataclasses.dataclass
class Paths:
    """What a row drives: the API, the scripted model and the Temporal server (to see child workflows)."""

    api: httpx.AsyncClient
    script: Any
    model_server: Any
    temporal_env: Any


async def _prompt_steps(p: Paths) -> str:
    task = {"name": "prompts", "budget": BUDGET, "main": [{"prompt": f"p{i}"} for i in range(N + 1)]}
    execution, _ = await run_task(p.api, task)
    return execution["error"]


BILLING_RULE = "Quote the invoice number"


def _handing_model(call: Call) -> Reply:
    """The first agent hands off to billing, which then looks its agents up for ever (a tool loop)."""
    system = " ".join(m["content"] for m in call.messages if m["role"] == "system")
    if BILLING_RULE not in system:
        return Reply(tool_calls=[("transfer_to_billing", {})])
    return Reply(tool_calls=[("agents", {})])


async def _handoff(p: Paths) -> str:
    billing = (await p.api.post("/agents", json={"name": "Billing", "instructions": [BILLING_RULE]})).json()
    tool = {"name": "agents", "type": "system", "system": {"call": "agent.list"}}
    assert (await p.api.post(f"/agents/{billing['id']}/tools", json=tool)).status_code == 201
    triage = (await p.api.post("/agents", json={"name": "Triage", "handoffs": [billing["id"]]})).json()
    p.script.reply = _handing_model
    step = {"prompt": "Is my invoice paid?", "auto_run_tools": True, "max_turns": 3 * N}
    execution, _ = await run_task(
        p.api, {"name": "desk", "budget": BUDGET, "main": [step]}, agent_id=triage["id"]
    )
    # All but the first call were the billing agent's, after the handoff.
    assert [BILLING_RULE in str(c.messages) for c in p.model_server.calls] == [False] + [True] * (N - 1)
    return execution["error"]


async def _parallel_branches(p: Paths) -> str:
    # N branches side by side use the budget; a branch of the next parallel step is refused.
    side_by_side = {"parallel": [[{"prompt": f"branch {i}"}] for i in range(N)]}
    task = {
        "name": "branches",
        "budget": BUDGET,
        "main": [side_by_side, {"parallel": [[{"prompt": "one more"}]]}],
    }
    execution, rows = await run_task(p.api, task)
    assert _error_row(rows)["current"]["step"] == 1  # the second parallel step
    return execution["error"]


async def _map_in_child_workflows(p: Paths) -> str:
    # Past CHUNK_ITEMS items with a call each, a map runs in child workflows; one item at a time.
    step = {"over": f"$ list(range({CHUNK_ITEMS + 1}))", "map": {"prompt": "$ str(_)"}, "parallelism": 1}
    execution, _ = await run_task(p.api, {"name": "wide", "budget": BUDGET, "main": [step]})
    history = await p.temporal_env.client.get_workflow_handle(execution["id"]).fetch_history()
    started = [
        e for e in history.events if e.HasField("start_child_workflow_execution_initiated_event_attributes")
    ]
    assert len(started) == 1  # every call, the refused one too, was the child's
    return execution["error"]


async def _restart(p: Paths) -> str:
    # The original stops at its last prompt; restarted from its first, the new execution has its own budget.
    main = [{"evaluate": {"n": "$ 1"}}, *({"prompt": f"p{i}"} for i in range(N + 1))]
    original, rows = await run_task(p.api, {"name": "again", "budget": BUDGET, "main": main})
    assert original["error"].startswith("BudgetExceeded: "), original
    first_prompt = next(r for r in rows if r["type"] == "step" and r["current"]["step"] == 1)
    p.model_server.calls.clear()
    response = await p.api.post(
        f"/executions/{original['id']}/restart", json={"from_transition": first_prompt["id"]}
    )
    assert response.status_code == 201, response.text
    return (await wait_for_status(p.api, response.json()["id"]))["error"]


async def _guardrail_model_checks(p: Paths) -> str:
    p.script.reply = _allow_or_echo
    judges = [{**JUDGE, "name": f"judge_{i}"} for i in range(N + 1)]
    task = {"name": "judged", "budget": BUDGET, "guardrails": {"input": judges}, "main": [{"prompt": "hi"}]}
    execution, _ = await run_task(p.api, task, {"q": 1})
    assert all(c.body["response_format"]["type"] == "json_schema" for c in p.model_server.calls)
    return execution["error"]


async def _session_chat(p: Paths) -> str:
    session = await _session(p.api, BUDGET)
    for i in range(N):
        assert (await _chat(p.api, session["id"], f"chat {i}")).status_code == 201
    refused = await _chat(p.api, session["id"], "one more")
    assert refused.status_code == 402, refused.text
    return refused.json()["error"]["message"]


@pytest.mark.parametrize(
    "path",
    [
        _prompt_steps,
        _handoff,
        _parallel_branches,
        _map_in_child_workflows,
        _restart,
        _guardrail_model_checks,
        _session_chat,
    ],
    ids=lambda path: path.__name__.strip("_"),
)
async def test_every_path_that_calls_a_model_is_held_to_the_budget(
    path: Callable[[Paths], Awaitable[str]], mapi, script, model_server, temporal_env
):
    error = await path(Paths(mapi, script, model_server, temporal_env))
    assert len(model_server.calls) == N  # made at the model: exactly the N allowed
    assert error.startswith("BudgetExceeded: "), error
    assert f"{N} model calls were made and the budget allows {N} (max_model_calls)" in error


# Whose budget a call is charged to comes from where it runs -------------------------------------------------


@pytest.mark.parametrize(
    ("workflow_type", "workflow_id", "charged"),
    [
        (
            TASK_EXECUTION_WORKFLOW,
            "8c1d7a9e-0d5e-4c43-9d0f-3c1f4f2b6a11",
            "8c1d7a9e-0d5e-4c43-9d0f-3c1f4f2b6a11",
        ),
        (
            MAP_CHUNK_WORKFLOW,
            "8c1d7a9e-0d5e-4c43-9d0f-3c1f4f2b6a11.chunk.5e0b3c8a-1f3d-4d7e-8a55-0a6a1e2b3c4d",
            "8c1d7a9e-0d5e-4c43-9d0f-3c1f4f2b6a11",
        ),
        (MAP_CHUNK_WORKFLOW, "not-an-execution", None),
        (TASK_EXECUTION_WORKFLOW, "test", None),
        (RUN_TOOL_WORKFLOW, f"chat-tool-{uuid.uuid4()}", None),
        ("CompressSessionWorkflow", "compress-session-d-s", None),
    ],
)
def test_a_calls_execution_is_its_workflows_and_one_with_none_is_refused(
    workflow_type: str, workflow_id: str, charged: str | None
):
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, workflow_type=workflow_type, workflow_id=workflow_id)
    if charged is not None:
        assert env.run(_charged_execution) == charged
        return
    with pytest.raises(ApplicationError) as refused:
        env.run(_charged_execution)
    assert refused.value.type == "BudgetUnknown" and refused.value.non_retryable


async def test_a_call_for_an_execution_that_does_not_exist_is_refused(store):
    with pytest.raises(UnknownExecution):
        await Budgets(store.pool).reserve_call(str(uuid.uuid4()), "wf/run/1")
