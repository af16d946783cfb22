"""Guardrails through the HTTP API on the real stack, with the scripted local model: check
and prompt guardrails on an execution's input and output and in a chat, and their validation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from tests.helpers import create_agent, create_task, run_task, start, transitions, wait_for_status
from tests.local_http import LocalServer
from tests.model_server import Call, Reply

NO_SECRETS = {"name": "no_secrets", "check": "$ 'secret' not in str(_)", "message": "no secrets, please"}
SMALL = {"name": "small", "check": "$ _.n < 3", "message": "n is {{ _.n }}, over 2"}
DOUBLE = {"label": "double", "evaluate": {"n": "$ _.n * 2"}}
TASK: dict[str, Any] = {
    "name": "guarded",
    "guardrails": {"input": [NO_SECRETS], "output": [SMALL]},
    "main": [{"evaluate": {"n": "$ _.n * 2"}}],
}


def _verdict_or_echo(allowed: bool, reason: str = "") -> Any:
    """The model: a guardrail's call (asked for JSON under a schema) gets the verdict, any other the echo."""

    def reply(call: Call) -> Reply:
        if (call.body.get("response_format") or {}).get("type") == "json_schema":
            return Reply(content=json.dumps({"allowed": allowed, "reason": reason}))
        return Reply(content=f"echo: {call.messages[-1]['content']}")

    return reply


async def _agent(api: httpx.AsyncClient, **fields: Any) -> dict[str, Any]:
    response = await api.post("/agents", json={"name": "guarded", "model": "gpt-4o-mini", **fields})
    assert response.status_code == 201, response.text
    return response.json()


# Executions --------------------------------------------------------------------------------------------------


async def test_an_input_check_that_refuses_fails_the_execution_before_its_first_step(mapi):
    execution, rows = await run_task(mapi, TASK, {"n": 1, "note": "my secret"})
    assert execution["status"] == "failed"
    assert execution["error"] == "InputGuardrailTripwire: no secrets, please"
    assert [r["type"] for r in rows] == ["init", "error"]
    assert rows[-1]["metadata"] == {
        "error_type": "InputGuardrailTripwire",
        "guardrail": "no_secrets",
    }


async def test_passing_checks_add_no_transitions(mapi):
    execution, rows = await run_task(mapi, TASK, {"n": 1})
    assert execution["status"] == "succeeded", execution["error"]
    assert execution["output"] == {"n": 2}
    assert [r["type"] for r in rows] == ["init", "step", "finish"]


async def test_an_output_check_that_refuses_fails_the_execution_after_its_last_step(mapi):
    execution, rows = await run_task(mapi, TASK, {"n": 2})
    assert execution["status"] == "failed"
    assert execution["error"] == "OutputGuardrailTripwire: n is 4, over 2"
    assert [r["type"] for r in rows] == ["init", "step", "error"]
    assert rows[1]["output"] == {"n": 4}  # the step ran; its output never became the execution's
    assert rows[-1]["metadata"]["error_type"] == "OutputGuardrailTripwire"
    assert rows[-1]["metadata"]["guardrail"] == "small"
    assert execution["output"] is None


async def test_the_tasks_guardrails_run_before_the_agents_and_both_apply(mapi):
    agent = await _agent(
        mapi,
        guardrails={
            "input": [{"name": "agent_says_no", "check": "$ not _.get('blocked')", "message": "agent"}]
        },
    )
    assert agent["guardrails"]["input"][0]["name"] == "agent_says_no"
    task = {**TASK, "guardrails": {"input": [{**NO_SECRETS, "message": "task"}]}}
    both, _ = await run_task(mapi, task, {"n": 1, "blocked": True, "x": "secret"}, agent_id=agent["id"])
    assert both["error"] == "InputGuardrailTripwire: task"
    agents, rows = await run_task(mapi, task, {"n": 1, "blocked": True}, agent_id=agent["id"])
    assert agents["error"] == "InputGuardrailTripwire: agent"
    assert rows[-1]["metadata"]["guardrail"] == "agent_says_no"
    neither, _ = await run_task(mapi, task, {"n": 1}, agent_id=agent["id"])
    assert neither["status"] == "succeeded", neither["error"]


async def test_a_model_guardrail_that_refuses_trips_with_its_reason(mapi, script, model_server):
    script.reply = _verdict_or_echo(False, "that is off topic")
    guardrail = {
        "name": "on_topic",
        "prompt": "Is this about cooking? {{ _.question }}",
        "model": "gpt-4o-mini",
    }
    task = {"name": "ask", "guardrails": {"input": [guardrail]}, "main": [{"prompt": "$ _.question"}]}
    execution, rows = await run_task(mapi, task, {"question": "who won the match?"})
    assert execution["status"] == "failed"
    assert execution["error"] == "InputGuardrailTripwire: that is off topic"
    (call,) = model_server.calls  # the guardrail's: the prompt step never ran
    assert call.body["response_format"]["type"] == "json_schema"
    assert call.body["response_format"]["json_schema"]["schema"]["required"] == ["allowed", "reason"]
    assert call.messages[-1]["content"] == "Is this about cooking? who won the match?"
    assert [r["type"] for r in rows] == ["init", "step", "error"]
    verdict = rows[1]
    assert verdict["output"] == {"guardrail": "on_topic", "allowed": False, "reason": "that is off topic"}
    assert verdict["metadata"]["guardrail"] == "on_topic" and verdict["metadata"]["usage"]["total_tokens"] > 0
    assert rows[-1]["metadata"]["guardrail"] == "on_topic"


async def test_a_model_guardrail_that_allows_lets_the_execution_run(mapi, script, model_server):
    script.reply = _verdict_or_echo(True, "about cooking")
    guardrail = {"name": "on_topic", "prompt": "Is this about cooking? {{ _ }}"}
    agent = await _agent(mapi, guardrails={"output": [guardrail]})
    task = {"name": "ask", "main": [{"prompt": "$ _.question", "unwrap": True}]}
    execution, rows = await run_task(
        mapi, task, {"question": "how long to boil an egg?"}, agent_id=agent["id"]
    )
    assert execution["status"] == "succeeded", execution["error"]
    assert execution["output"] == "echo: how long to boil an egg?"
    assert [c.model for c in model_server.calls] == ["gpt-4o-mini", "gpt-4o-mini"]  # the agent's model
    assert (
        model_server.calls[1].messages[-1]["content"]
        == "Is this about cooking? echo: how long to boil an egg?"
    )
    assert [r["type"] for r in rows] == ["init", "step", "step", "finish"]
    assert rows[2]["metadata"]["guardrail"] == "on_topic" and rows[2]["metadata"]["stage"] == "output"


async def test_a_model_that_answers_no_verdict_is_a_model_behavior_error(mapi, script):
    script.reply = lambda call: Reply(content='{"allowed": "maybe"}')
    guardrail = {"name": "judge", "prompt": "ok? {{ _ }}", "model": "gpt-4o-mini"}
    task = {
        "name": "ask",
        "guardrails": {"input": [guardrail]},
        "defaults": {"retry": {"max_attempts": 1}},
        "main": [{"evaluate": {"x": "$ 1"}}],
    }
    execution, rows = await run_task(mapi, task, {})
    assert execution["error"].startswith("ModelBehaviorError: input guardrail 'judge': "), execution["error"]
    assert rows[-1]["metadata"]["error_type"] == "ModelBehaviorError"


async def test_a_tool_with_on_error_fail_fails_the_prompt_step_as_a_tool_call_error(mapi, script):
    script.reply = lambda call: Reply(tool_calls=[("broken", {})])
    with LocalServer(lambda r: (503, {}, b"down")) as down:
        tool = {"name": "broken", "type": "api_call", "api_call": {"url": down.url}, "on_error": "fail"}
        step = {"prompt": "go", "tools": "all", "auto_run_tools": True, "retry": {"max_attempts": 1}}
        execution, rows = await run_task(mapi, {"name": "t", "tools": [tool], "main": [step]})
    assert execution["status"] == "failed"
    assert execution["error"].startswith("ToolCallError: tool 'broken' failed"), execution["error"]
    assert "503" in execution["error"]
    assert rows[-1]["metadata"]["error_type"] == "ToolCallError"


# Validation --------------------------------------------------------------------------------------------------


async def _task_problems(api: httpx.AsyncClient, guardrails: Any) -> list[dict[str, str]]:
    agent = await create_agent(api)
    task = {"name": "t", "guardrails": guardrails, "main": [{"evaluate": {"x": "$ 1"}}]}
    response = await api.post(f"/agents/{agent['id']}/tasks", json=task)
    assert response.status_code == 422, response.text
    return response.json()["error"]["details"]


async def test_bad_guardrails_are_refused_when_the_task_is_created(mapi):
    both = await _task_problems(mapi, {"input": [{"name": "g", "check": "$ True", "prompt": "p"}]})
    assert both[0]["loc"].startswith("guardrails.input[0]") and "exactly one of" in both[0]["msg"]
    neither = await _task_problems(mapi, {"output": [{"name": "g"}]})
    assert "exactly one of" in neither[0]["msg"]
    twice = await _task_problems(mapi, {"input": [NO_SECRETS, NO_SECRETS]})
    assert "unique" in twice[0]["msg"] and "no_secrets" in twice[0]["msg"]
    bad = await _task_problems(
        mapi,
        {
            "input": [{"name": "a", "check": "$ len(_) <"}],
            "output": [{"name": "b", "check": "$ nope(_)", "message": "{{ _.x "}],
        },
    )
    assert {p["loc"] for p in bad} == {
        "guardrails.input[0].check",
        "guardrails.output[0].check",
        "guardrails.output[0].message",
    }
    assert any("unknown name 'nope'" in p["msg"] for p in bad)
    unknown = await _task_problems(mapi, {"input": [{"name": "a", "check": "$ 1", "mesage": "x"}]})
    assert unknown[0]["loc"].startswith("guardrails.input[0]")


async def test_bad_guardrails_are_refused_when_the_agent_is_written(mapi):
    response = await mapi.post("/agents", json={"name": "a", "guardrails": {"input": [{"name": "g"}]}})
    assert response.status_code == 422 and "exactly one of" in response.text
    response = await mapi.post(
        "/agents", json={"name": "a", "guardrails": {"output": [{"name": "g", "check": "$ 1 +"}]}}
    )
    assert response.status_code == 422, response.text
    assert response.json()["error"]["details"][0]["loc"] == "body.guardrails.output[0].check"
    agent = await _agent(mapi)
    response = await mapi.patch(
        f"/agents/{agent['id']}", json={"guardrails": {"input": [{"name": "g", "check": "$ zzz"}]}}
    )
    assert response.status_code == 422 and "zzz" in response.text


# Chat --------------------------------------------------------------------------------------------------------


async def _chat(api: httpx.AsyncClient, agent: dict[str, Any], text: str) -> tuple[httpx.Response, str]:
    session = (await api.post("/sessions", json={"agent": agent["id"]})).json()
    answer = await api.post(
        f"/sessions/{session['id']}/chat", json={"messages": [{"role": "user", "content": text}]}
    )
    return answer, session["id"]


async def _history(api: httpx.AsyncClient, session_id: str) -> list[Any]:
    return (await api.get(f"/sessions/{session_id}/history")).json()["entries"]


async def test_a_chat_input_guardrail_refuses_with_a_400_and_saves_nothing(mapi, model_server):
    no_passwords = {
        "name": "no_passwords",
        "check": "$ 'password' not in _",
        "message": "keep passwords to yourself",
    }
    agent = await _agent(mapi, guardrails={"input": [no_passwords]})
    answer, session_id = await _chat(mapi, agent, "my password is hunter2")
    assert answer.status_code == 400, answer.text
    body = answer.json()
    assert body["error"]["message"] == "InputGuardrailTripwire: keep passwords to yourself"
    assert body["error"]["type"] == "InputGuardrailTripwire"
    assert model_server.calls == []  # refused before any model was asked
    assert await _history(mapi, session_id) == []
    fine, session_id = await _chat(mapi, agent, "hello")
    assert fine.status_code == 201, fine.text
    assert len(await _history(mapi, session_id)) == 2


async def test_a_chat_output_guardrail_refuses_the_answer_with_a_400_and_saves_nothing(mapi):
    no_echo = {"name": "no_echo", "check": "$ not _.startswith('echo')", "message": "answers may not echo"}
    agent = await _agent(mapi, guardrails={"output": [no_echo]})
    answer, session_id = await _chat(mapi, agent, "hello")
    assert answer.status_code == 400, answer.text
    assert answer.json() == {  # Julep's error shape, the failure's kind as its type
        "error": {
            "message": "OutputGuardrailTripwire: answers may not echo",
            "code": "http_400",
            "type": "OutputGuardrailTripwire",
        },
        "detail": "OutputGuardrailTripwire: answers may not echo",
    }
    assert await _history(mapi, session_id) == []


async def test_a_chat_model_guardrail_refuses_with_its_reason(mapi, script, model_server):
    script.reply = _verdict_or_echo(False, "rude")
    agent = await _agent(mapi, guardrails={"input": [{"name": "polite", "prompt": "Polite? {{ _ }}"}]})
    answer, session_id = await _chat(mapi, agent, "hey you")
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["message"] == "InputGuardrailTripwire: rude"
    assert len(model_server.calls) == 1 and model_server.calls[0].messages[-1]["content"] == "Polite? hey you"
    assert await _history(mapi, session_id) == []


async def test_a_task_without_guardrails_keeps_its_transitions(mapi):
    """The same task as before guardrails existed, transition for transition (no guardrail, no cost)."""
    agent = await create_agent(mapi)
    created = await create_task(mapi, agent["id"], {"name": "plain", "main": [DOUBLE]})
    assert "guardrails" not in created
    execution = await start(mapi, created["id"], {"n": 1})
    done = await wait_for_status(mapi, execution["id"])
    rows = await transitions(mapi, execution["id"])
    assert done["output"] == {"n": 2}
    assert [(r["type"], r["metadata"]) for r in rows] == [("init", {}), ("step", {}), ("finish", {})]


async def test_the_example_refunds_small_amounts_and_refuses_large_ones(mapi):
    text = (Path(__file__).parent.parent / "examples" / "guardrails.yaml").read_text()
    small, _ = await run_task(mapi, text, {"order": "A-17", "amount": 40})
    assert small["output"] == {"note": "refund of 40 for order A-17 approved"}, small["error"]
    large, _ = await run_task(mapi, text, {"order": "A-17", "amount": 4000})
    assert large["error"] == "InputGuardrailTripwire: refunds over 500 need a person (this one is 4000)"
    card, _ = await run_task(mapi, text, {"order": "4111111111111111", "amount": 5})
    assert card["error"] == "OutputGuardrailTripwire: the answer would show a card number"


def _events(raw: str) -> list[dict[str, Any]]:
    return [json.loads(line[5:]) for line in raw.splitlines() if line.startswith("data:")]


async def _stream(api: httpx.AsyncClient, session_id: str, text: str) -> tuple[int, str]:
    """A streamed chat's status and its raw SSE body, as the client received it."""
    body = {"messages": [{"role": "user", "content": text}], "stream": True}
    async with api.stream("POST", f"/sessions/{session_id}/chat", json=body) as response:
        return response.status_code, (await response.aread()).decode()


NO_PINS = {"name": "no_pins", "check": "$ '4321' not in _", "message": "answers may not show a PIN"}


async def test_a_streamed_answer_an_output_guardrail_refuses_never_reaches_the_client(mapi, model_server):
    agent = await _agent(mapi, guardrails={"output": [NO_PINS]})
    session = (await mapi.post("/sessions", json={"agent": agent["id"]})).json()
    status, raw = await _stream(mapi, session["id"], "my PIN is 4321")
    assert model_server.calls[-1].body["stream"] is True  # the model did write it
    assert status == 200, raw
    assert "4321" not in raw  # no piece of the refused answer, in any event
    assert _events(raw) == [  # the refusal alone
        {"error": "OutputGuardrailTripwire: answers may not show a PIN", "type": "OutputGuardrailTripwire"}
    ]
    assert await _history(mapi, session["id"]) == []


async def test_a_streamed_answer_goes_out_once_the_output_guardrails_let_it_pass(mapi):
    agent = await _agent(mapi, guardrails={"output": [NO_PINS]})
    session = (await mapi.post("/sessions", json={"agent": agent["id"]})).json()
    question = "tell me something long enough to arrive in pieces"
    status, raw = await _stream(mapi, session["id"], question)
    assert status == 200, raw
    *texts, closing = _events(raw)
    # Held until checked, then sent whole, in the chunks a live stream has; the closing chunk as ever.
    assert [t["choices"][0]["delta"] for t in texts] == [
        {"role": "assistant", "content": f"echo: {question}"}
    ]
    assert closing["choices"][0]["finish_reason"] == "stop"
    assert "content" not in closing["choices"][0]["delta"]
    assert (await _history(mapi, session["id"]))[-1]["content"] == f"echo: {question}"
