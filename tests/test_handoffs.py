"""Handoffs: an agent's `handoffs`, the transfer tools a tool loop offers, the agent that
takes over, and a transfer outside the list as a HandoffError; in chat and in prompt steps, over HTTP against
the scripted model."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import httpx
import pytest
from temporalio.worker import Replayer

from infra.temporal.payload_codec import data_converter
from process.worker import workflow_runner
from tests.helpers import create_task, start, transitions, wait_for_status
from tests.model_server import Call, Reply
from tests.stack import TEST_ENCRYPTION_KEY
from workflows.agents import Agent
from workflows.execution import MapChunkWorkflow, TaskExecutionWorkflow
from workflows.handoffs import Handoffs

TRIAGE_RULE = "Send billing questions to billing"
BILLING_RULE = "Quote the invoice number"
AGENTS_TOOL = {"name": "agents", "type": "system", "system": {"call": "agent.list"}}


async def _agent(api: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    response = await api.post("/agents", json=body)
    assert response.status_code == 201, response.text
    return response.json()


@pytest.fixture
async def desk(mapi) -> tuple[dict[str, Any], dict[str, Any]]:
    """A triage agent that may hand off to a billing agent; billing has a tool of its own."""
    billing = await _agent(
        mapi,
        name="Billing Desk",
        about="answers questions about invoices",
        instructions=[BILLING_RULE],
        model="gpt-4o",
    )
    tool = await mapi.post(f"/agents/{billing['id']}/tools", json=AGENTS_TOOL)
    assert tool.status_code == 201, tool.text
    triage = await _agent(
        mapi, name="Triage", instructions=[TRIAGE_RULE], model="gpt-4o-mini", handoffs=[billing["id"]]
    )
    return triage, billing


def _system(call: Call) -> str:
    return " ".join(m["content"] for m in call.messages if m["role"] == "system")


def _results(call: Call) -> list[dict[str, Any]]:
    return [json.loads(m["content"]) for m in call.messages if m["role"] == "tool"]


def _desk_model(call: Call) -> Reply:
    """Triage transfers to billing; billing looks its agents up with its own tool, then answers."""
    if BILLING_RULE not in _system(call):
        return Reply(tool_calls=[("transfer_to_billing_desk", {})])
    if not any("handoff" not in (r.get("data") or {}) for r in _results(call)):  # no `agents` result yet
        return Reply(tool_calls=[("agents", {})])
    return Reply(content="billing: invoice INV-7 is paid")


# Agents ------------------------------------------------------------------------------------------------------


async def test_handoffs_are_the_developers_own_agents(mapi, store, model_stack, desk):
    triage, billing = desk
    assert triage["handoffs"] == [billing["id"]]
    assert (await mapi.get(f"/agents/{triage['id']}")).json()["handoffs"] == [billing["id"]]
    assert billing["handoffs"] == []

    missing = await mapi.post("/agents", json={"name": "x", "handoffs": [str(uuid.uuid4())]})
    assert missing.status_code == 404 and "not found" in missing.json()["error"]["message"]
    itself = await mapi.patch(f"/agents/{triage['id']}", json={"handoffs": [triage["id"]]})
    assert itself.status_code == 422 and "itself" in itself.json()["error"]["message"]

    _, key = await store.create_developer("other")
    async with httpx.AsyncClient(
        base_url=model_stack.url, headers={"Authorization": f"Bearer {key}"}
    ) as other:
        theirs = await _agent(other, name="theirs")
        stolen = await other.post("/agents", json={"name": "thief", "handoffs": [billing["id"]]})
        assert stolen.status_code == 404, stolen.text
    borrowed = await mapi.patch(f"/agents/{triage['id']}", json={"handoffs": [theirs["id"]]})
    assert borrowed.status_code == 404, borrowed.text

    cleared = await mapi.patch(f"/agents/{triage['id']}", json={"handoffs": None})
    assert cleared.status_code == 200 and cleared.json()["handoffs"] == []


def test_transfer_tools_get_valid_distinct_names_and_describe_their_target():
    targets = [
        {"id": "a", "name": "Billing Desk!", "about": "invoices"},
        {"id": "b", "name": "billing desk", "instructions": ["Refund politely"]},
        {"id": "c", "name": "agents"},
    ]
    agent = Agent.of({"id": "t", "handoffs": ["a", "b", "c"]})
    handoffs = Handoffs.of(agent, [Agent.of(t) for t in targets], {"transfer_to_agents"})
    offered = {t["function"]["name"]: t["function"]["description"] for t in handoffs.offered()}
    assert offered == {
        "transfer_to_billing_desk": "Hand the conversation to Billing Desk!: invoices",
        "transfer_to_billing_desk_2": "Hand the conversation to billing desk: Refund politely",
        "transfer_to_agents_2": "Hand the conversation to agents.",
    }


# Chat --------------------------------------------------------------------------------------------------------


async def test_a_chat_is_handed_to_the_agent_the_model_transfers_to(mapi, script, model_server, desk):
    triage, billing = desk
    script.reply = _desk_model
    session = (await mapi.post("/sessions", json={"agent": triage["id"], "auto_run_tools": True})).json()
    answer = await mapi.post(
        f"/sessions/{session['id']}/chat",
        json={"messages": [{"role": "user", "content": "Is my invoice paid?"}]},
    )
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert body["choices"][0]["message"]["content"] == "billing: invoice INV-7 is paid"
    assert body["choices"][0]["agent_id"] == billing["id"] and body["agent_id"] == billing["id"]
    assert re.fullmatch(r"[0-9a-f]{32}", body["trace_id"])  # still the chat's trace, after the handoff

    first, second, third = model_server.calls
    assert TRIAGE_RULE in _system(first) and first.model == "gpt-4o-mini"
    transfer = next(t for t in first.tools if t["name"] == "transfer_to_billing_desk")
    assert "answers questions about invoices" in transfer["description"]
    # From the transfer on, billing's instructions, model and tools are what the model gets.
    assert BILLING_RULE in _system(second) and TRIAGE_RULE not in _system(second)
    assert second.model == "gpt-4o" and [t["name"] for t in second.tools] == ["agents"]
    handed = _results(second)[0]["data"]
    assert handed["handoff"] == {
        "from": triage["id"],
        "to": billing["id"],
        "from_name": "Triage",
        "to_name": "Billing Desk",
    }
    assert (
        BILLING_RULE in _system(third) and _results(third)[1]["status"] == "success"
    )  # billing's own tool ran
    history = (await mapi.get(f"/sessions/{session['id']}/history")).json()["entries"]
    assert [e["role"] for e in history] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]


async def test_a_chat_transfer_outside_the_handoffs_is_a_handoff_error(mapi, script, desk):
    triage, _ = desk
    script.reply = lambda call: Reply(tool_calls=[("transfer_to_legal", {})])
    session = (await mapi.post("/sessions", json={"agent": triage["id"]})).json()
    answer = await mapi.post(
        f"/sessions/{session['id']}/chat", json={"messages": [{"role": "user", "content": "sue them"}]}
    )
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["type"] == "HandoffError"
    assert (
        answer.json()["error"]["message"].startswith("HandoffError: ")
        and "transfer_to_legal" in answer.json()["error"]["message"]
    )


async def test_after_a_chat_handoff_the_answering_agents_output_guardrails_apply(mapi, script, desk):
    triage, billing = desk
    script.reply = _desk_model
    says_no_billing = {"name": "triage_rule", "check": "$ 'billing' not in _", "message": "triage's rule"}
    no_invoices = {"name": "no_invoices", "check": "$ 'INV-' not in _", "message": "no invoice numbers"}
    patched = await mapi.patch(f"/agents/{triage['id']}", json={"guardrails": {"output": [says_no_billing]}})
    assert patched.status_code == 200, patched.text
    session = (await mapi.post("/sessions", json={"agent": triage["id"], "auto_run_tools": True})).json()
    ask = {"messages": [{"role": "user", "content": "Is my invoice paid?"}], "save": False}

    # Billing answered: triage's output guardrail (which would refuse the answer) does not apply.
    answer = await mapi.post(f"/sessions/{session['id']}/chat", json=ask)
    assert answer.status_code == 201, answer.text
    assert answer.json()["agent_id"] == billing["id"]

    # Billing's own does.
    patched = await mapi.patch(f"/agents/{billing['id']}", json={"guardrails": {"output": [no_invoices]}})
    assert patched.status_code == 200, patched.text
    refused = await mapi.post(f"/sessions/{session['id']}/chat", json=ask)
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["type"] == "OutputGuardrailTripwire"
    assert refused.json()["error"]["message"] == "OutputGuardrailTripwire: no invoice numbers"


async def test_a_chat_handed_over_runs_the_targets_input_guardrails_first(mapi, script, model_server, desk):
    triage, billing = desk
    script.reply = _desk_model
    no_invoices = {"name": "no_invoices", "check": "$ 'invoice' not in _", "message": "billing is closed"}
    patched = await mapi.patch(f"/agents/{billing['id']}", json={"guardrails": {"input": [no_invoices]}})
    assert patched.status_code == 200, patched.text
    session = (await mapi.post("/sessions", json={"agent": triage["id"], "auto_run_tools": True})).json()
    ask = {"messages": [{"role": "user", "content": "Is my invoice paid?"}]}

    refused = await mapi.post(f"/sessions/{session['id']}/chat", json=ask)
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["type"] == "InputGuardrailTripwire"
    assert refused.json()["error"]["message"] == "InputGuardrailTripwire: billing is closed"
    (asked,) = model_server.calls  # triage's, which transferred: billing's model was never asked
    assert TRIAGE_RULE in _system(asked)
    assert (await mapi.get(f"/sessions/{session['id']}/history")).json()["entries"] == []

    # What billing is handed, checked by `messages` too: the user's question and the transfer.
    saw = {"name": "saw", "check": "$ [m['role'] for m in messages] == ['user', 'assistant', 'tool']"}
    patched = await mapi.patch(f"/agents/{billing['id']}", json={"guardrails": {"input": [saw]}})
    assert patched.status_code == 200, patched.text
    answer = await mapi.post(f"/sessions/{session['id']}/chat", json=ask)
    assert answer.status_code == 201, answer.text
    assert answer.json()["agent_id"] == billing["id"]


async def test_a_streamed_chat_holds_back_what_the_agent_handed_to_may_not_say(mapi, script, desk):
    triage, billing = desk
    script.reply = _desk_model
    no_invoices = {"name": "no_invoices", "check": "$ 'INV-' not in _", "message": "no invoice numbers"}
    patched = await mapi.patch(f"/agents/{billing['id']}", json={"guardrails": {"output": [no_invoices]}})
    assert patched.status_code == 200, patched.text
    session = (await mapi.post("/sessions", json={"agent": triage["id"], "auto_run_tools": True})).json()
    body = {"messages": [{"role": "user", "content": "Is my invoice paid?"}], "stream": True}
    async with mapi.stream("POST", f"/sessions/{session['id']}/chat", json=body) as response:
        raw = (await response.aread()).decode()
    assert response.status_code == 200, raw
    assert "INV-" not in raw  # triage has no guardrails, but the agent it may hand to has
    events = [json.loads(line[6:]) for line in raw.splitlines() if line.startswith("data: ")]
    assert events == [
        {"error": "OutputGuardrailTripwire: no invoice numbers", "type": "OutputGuardrailTripwire"}
    ]


# Executions --------------------------------------------------------------------------------------------------

HANDOFF_TASK = {
    "name": "help desk",
    "main": [
        {
            "prompt": [
                {"role": "system", "content": "You are the front desk."},
                {"role": "user", "content": "Is my invoice paid?"},
            ],
            "auto_run_tools": True,
            "unwrap": True,
        },
        {"evaluate": {"answer": "$ _"}},
    ],
}


async def _run(api: httpx.AsyncClient, agent_id: str, task: dict[str, Any]) -> dict[str, Any]:
    created = await create_task(api, agent_id, task)
    execution = await start(api, created["id"])
    return await wait_for_status(api, execution["id"])


async def test_a_prompt_step_is_handed_over_and_replays(
    mapi, script, model_server, desk, temporal_env, store
):
    triage, billing = desk
    script.reply = _desk_model
    done = await _run(mapi, triage["id"], HANDOFF_TASK)
    assert done["status"] == "succeeded", done
    assert done["output"] == {"answer": "billing: invoice INV-7 is paid"}

    first, second, third = model_server.calls
    assert _results(third)[1]["status"] == "success", _results(third)  # billing's own tool ran
    assert "You are the front desk." in _system(first)
    assert [t["name"] for t in first.tools] == ["transfer_to_billing_desk"]
    assert BILLING_RULE in _system(second) and "front desk" not in _system(second)
    assert second.model == "gpt-4o" and [t["name"] for t in second.tools] == ["agents"]

    rows = await transitions(mapi, done["id"])
    handoffs = [r for r in rows if "handoff" in r["metadata"]]
    assert len(handoffs) == 1
    record = {"from": triage["id"], "to": billing["id"], "from_name": "Triage", "to_name": "Billing Desk"}
    assert handoffs[0]["metadata"]["handoff"] == record and handoffs[0]["output"]["handoff"] == record
    answered = next(r for r in rows if r["output"] == "billing: invoice INV-7 is paid")
    assert answered["metadata"]["agent_id"] == billing["id"]

    # The trace shows the handoff, from the transfer's metadata, after the call that asked for it.
    trace = (await mapi.get(f"/executions/{done['id']}/trace")).json()
    kinds = [i["type"] for i in trace["items"]]
    assert [i["data"] for i in trace["items"] if i["type"] == "handoff"] == [
        {"from": triage["id"], "to": billing["id"]}
    ]
    at = kinds.index("handoff")
    assert "llm_call_end" in kinds[:at] and "llm_call_start" in kinds[at:], kinds

    # The execution, handoff and all, replays against the workflow code.
    history = await temporal_env.client.get_workflow_handle(done["id"]).fetch_history()
    replayer = Replayer(
        workflows=[TaskExecutionWorkflow, MapChunkWorkflow],
        workflow_runner=workflow_runner(strict=True),
        data_converter=data_converter(store.pool, keys=(TEST_ENCRYPTION_KEY,)),
    )
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, result.replay_failure


async def test_a_prompt_step_handed_over_runs_the_targets_guardrails(mapi, script, model_server, desk):
    triage, billing = desk
    script.reply = _desk_model
    no_invoices = {"name": "no_invoices", "check": "$ 'invoice' not in _", "message": "billing is closed"}
    patched = await mapi.patch(f"/agents/{billing['id']}", json={"guardrails": {"input": [no_invoices]}})
    assert patched.status_code == 200, patched.text
    closed = await _run(mapi, triage["id"], HANDOFF_TASK)
    assert closed["status"] == "failed"
    assert closed["error"] == "InputGuardrailTripwire: billing is closed"
    assert len(model_server.calls) == 1  # triage's, which transferred: billing's model was never asked
    rows = await transitions(mapi, closed["id"])
    assert rows[-1]["metadata"] == {"error_type": "InputGuardrailTripwire", "guardrail": "no_invoices"}

    # Its output guardrails check its answer (the task's and triage's, which have none, still apply too).
    no_numbers = {"name": "no_numbers", "check": "$ 'INV-' not in _", "message": "no invoice numbers"}
    patched = await mapi.patch(f"/agents/{billing['id']}", json={"guardrails": {"output": [no_numbers]}})
    assert patched.status_code == 200, patched.text
    refused = await _run(mapi, triage["id"], HANDOFF_TASK)
    assert refused["status"] == "failed" and refused["output"] is None
    assert refused["error"] == "OutputGuardrailTripwire: no invoice numbers"
    rows = await transitions(mapi, refused["id"])
    assert rows[-1]["metadata"] == {"error_type": "OutputGuardrailTripwire", "guardrail": "no_numbers"}
    assert not any(r["output"] == "billing: invoice INV-7 is paid" for r in rows)  # the step never ended


async def test_a_handed_agents_model_guardrail_is_its_own_call_in_the_step(mapi, script, model_server, desk):
    triage, billing = desk

    def model(call: Call) -> Reply:
        if (call.body.get("response_format") or {}).get("type") == "json_schema":
            return Reply(content=json.dumps({"allowed": True, "reason": "a fair answer"}))
        return _desk_model(call)

    script.reply = model
    judge = {"name": "judge", "prompt": "Fair? {{ _ }}"}
    patched = await mapi.patch(f"/agents/{billing['id']}", json={"guardrails": {"output": [judge]}})
    assert patched.status_code == 200, patched.text
    done = await _run(mapi, triage["id"], HANDOFF_TASK)
    assert done["status"] == "succeeded", done
    assert done["output"] == {"answer": "billing: invoice INV-7 is paid"}
    asked = model_server.calls[-1]
    assert asked.model == "gpt-4o"  # billing's model, as the guardrail names none
    assert asked.messages[-1]["content"] == "Fair? billing: invoice INV-7 is paid"
    rows = await transitions(mapi, done["id"])
    verdict = next(r for r in rows if r["metadata"].get("guardrail") == "judge")
    assert verdict["output"] == {"guardrail": "judge", "allowed": True, "reason": "a fair answer"}
    assert verdict["metadata"]["stage"] == "output" and verdict["current"]["step"] == 0


async def test_a_prompt_step_transfer_outside_the_handoffs_fails_with_handoff_error(mapi, script, desk):
    triage, _ = desk
    script.reply = lambda call: Reply(tool_calls=[("transfer_to_legal", {})])
    done = await _run(mapi, triage["id"], HANDOFF_TASK)
    assert done["status"] == "failed"
    assert done["error"].startswith("HandoffError: ") and "transfer_to_legal" in done["error"]
    last = (await transitions(mapi, done["id"]))[-1]
    assert last["type"] == "error" and last["metadata"]["error_type"] == "HandoffError"


async def test_a_step_without_auto_run_tools_offers_no_transfer(mapi, script, model_server, desk):
    triage, _ = desk
    task = {"name": "plain", "main": [{"prompt": "hi", "unwrap": True}]}
    done = await _run(mapi, triage["id"], task)
    assert done["status"] == "succeeded", done
    assert model_server.calls[0].tools == []


async def test_the_handoffs_example_runs(mapi, script):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parent.parent / "examples" / "handoffs.py"
    spec = importlib.util.spec_from_file_location("handoffs_example", path)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)

    def model(call: Call) -> Reply:
        if "Answer as the billing desk" in _system(call):
            return Reply(content="billing: invoice 42 was paid")
        return Reply(tool_calls=[("transfer_to_billing", {})])

    script.reply = model
    result = await example.main(mapi)
    billing = result["agents"]["billing"]
    assert (
        result["task"]["status"] == "succeeded" and result["task"]["output"] == "billing: invoice 42 was paid"
    )
    assert [h["to"] for h in result["task"]["handoffs"]] == [billing]
    assert result["chat"] == {"answer": "billing: invoice 42 was paid", "agent_id": billing}


async def test_the_agent_handed_to_offers_its_own_handoffs(mapi, script, model_server, desk):
    triage, billing = desk
    refunds = await _agent(mapi, name="Refunds", instructions=["Refund within 30 days"])
    patched = await mapi.patch(f"/agents/{billing['id']}", json={"handoffs": [refunds["id"]]})
    assert patched.status_code == 200, patched.text

    def model(call: Call) -> Reply:
        system = _system(call)
        if "Refund within 30 days" in system:
            return Reply(content="refunds: done")
        if BILLING_RULE in system:
            return Reply(tool_calls=[("transfer_to_refunds", {})])
        return Reply(tool_calls=[("transfer_to_billing_desk", {})])

    script.reply = model
    done = await _run(mapi, triage["id"], HANDOFF_TASK)
    assert done["status"] == "succeeded" and done["output"] == {"answer": "refunds: done"}, done
    assert [t["name"] for t in model_server.calls[1].tools] == ["agents", "transfer_to_refunds"]
    rows = await transitions(mapi, done["id"])
    hops = [
        (r["metadata"]["handoff"]["from"], r["metadata"]["handoff"]["to"])
        for r in rows
        if "handoff" in r["metadata"]
    ]
    assert hops == [(triage["id"], billing["id"]), (billing["id"], refunds["id"])]


async def test_a_streamed_chat_names_the_agent_that_answered(mapi, script, desk):
    triage, billing = desk
    script.reply = _desk_model
    session = (await mapi.post("/sessions", json={"agent": triage["id"], "auto_run_tools": True})).json()
    body = {"messages": [{"role": "user", "content": "Is my invoice paid?"}], "stream": True}
    async with mapi.stream("POST", f"/sessions/{session['id']}/chat", json=body) as response:
        assert response.status_code == 200
        chunks = [json.loads(line[6:]) async for line in response.aiter_lines() if line.startswith("data: ")]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert text == "billing: invoice INV-7 is paid"
    assert chunks[-1]["choices"][0]["agent_id"] == billing["id"]
    assert re.fullmatch(r"[0-9a-f]{32}", chunks[-1]["trace_id"])
