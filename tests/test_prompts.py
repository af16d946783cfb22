"""Prompt steps and the tool-calling loop, through the real openai and anthropic SDKs to a scripted local model."""

from __future__ import annotations

import json
import logging
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ANTHROPIC_KEY, OPENAI_KEY, temporal_address
from tests.helpers import create_agent, create_task, run_task, start, transitions, wait_for_status
from tests.local_http import LocalServer, Request
from tests.model_server import Call, Reply
from tests.stack import BackgroundStack

EXAMPLES = Path(__file__).parent.parent / "examples"


def _last_user(call: Call) -> str:
    return next(m["content"] for m in reversed(call.messages) if m["role"] == "user")


@pytest.mark.parametrize("model", ["gpt-4o-mini", "claude-haiku-4-5"])
async def test_a_prompt_answers_with_a_chat_completion_and_records_usage(mapi, model_server, model):
    task = {
        "name": "hello",
        "main": [
            {"evaluate": {"who": "$ 'Ada'"}},
            {
                "prompt": [
                    {"role": "system", "content": "You are {{agent.name}}."},
                    {"role": "user", "content": "Greet {{_.who}}"},
                ],
                "settings": {"model": model, "temperature": 0.2},
            },
            {
                "evaluate": {
                    "seed_form": '$ _["choices"][0].content',
                    "usual": "$ _.choices[0].message.content",
                }
            },
        ],
    }
    execution, rows = await run_task(mapi, task)
    assert execution["status"] == "succeeded", execution["error"]
    assert execution["output"] == {"seed_form": "echo: Greet Ada", "usual": "echo: Greet Ada"}
    (call,) = model_server.calls
    assert call.provider == ("anthropic" if model.startswith("claude") else "openai")
    assert call.messages[0] == {"role": "system", "content": "You are tester."}
    assert call.body["temperature"] == 0.2
    prompt_row = rows[2]
    assert prompt_row["output"]["choices"][0]["finish_reason"] == "stop"
    usage = prompt_row["metadata"]["usage"]
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert prompt_row["metadata"]["cost"] > 0
    assert execution["usage"]["prompt_tokens"] == usage["prompt_tokens"]
    assert execution["usage"]["cost"] == pytest.approx(prompt_row["metadata"]["cost"])


async def test_unwrap_and_settings_precedence_step_over_task_over_agent(mapi, model_server):
    agent = (
        await mapi.post(
            "/agents",
            json={"name": "a", "model": "gpt-4o", "default_settings": {"temperature": 0.9, "top_p": 0.5}},
        )
    ).json()
    task = {
        "name": "layers",
        "defaults": {"settings": {"temperature": 0.5, "max_tokens": 50}},
        "main": [{"prompt": "Hi", "unwrap": True, "settings": {"max_tokens": 20}}],
    }
    execution, _ = await run_task(mapi, task, agent_id=agent["id"])
    assert execution["output"] == "echo: Hi"
    body = model_server.calls[0].body
    assert (body["model"], body["temperature"], body["top_p"], body["max_tokens"]) == ("gpt-4o", 0.5, 0.5, 20)


async def test_json_schema_output_is_validated_and_a_bad_answer_retried(mapi, script, model_server):
    answers = iter(['{"name": "Ada"}', '{"name": "Ada", "age": 36}'])
    script.reply = lambda call: next(answers)
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name", "age"],
    }
    task = {
        "name": "json",
        "main": [
            {
                "prompt": "Who?",
                "unwrap": True,
                "settings": {
                    "response_format": {
                        "type": "json_schema",
                        "json_schema": {"name": "person", "schema": schema},
                    }
                },
                "retry": {"initial_interval": 0.1},
            }
        ],
    }
    execution, rows = await run_task(mapi, task)
    assert execution["status"] == "succeeded", execution["error"]
    assert execution["output"] == {"name": "Ada", "age": 36}
    assert rows[1]["metadata"]["attempts"] == 2
    assert model_server.calls[0].body["response_format"]["type"] == "json_schema"


async def test_a_json_answer_that_never_fits_fails_clearly(mapi, script):
    script.reply = lambda call: "not json at all"
    task = {
        "name": "json",
        "main": [
            {
                "prompt": "Who?",
                "settings": {"response_format": {"type": "json_object"}},
                "retry": {"max_attempts": 2, "initial_interval": 0.1},
            }
        ],
    }
    execution, _ = await run_task(mapi, task)
    assert execution["status"] == "failed"
    assert "not JSON" in execution["error"]


def _calculator(request: Request) -> tuple[int, dict[str, str], bytes]:
    """The seed's tools (string length, add, square root) as a local HTTP service."""
    body = json.loads(request.body or b"{}")
    if request.path == "/length":
        value: Any = len(body["s"])
    elif request.path == "/add":
        value = body["a"] + body["b"]
    else:
        value = body["x"] ** 0.5
    return 200, {"Content-Type": "application/json"}, json.dumps({"value": value}).encode()


def _calculator_tools(url: str) -> list[dict[str, Any]]:
    def tool(name: str, properties: dict[str, Any]) -> dict[str, Any]:
        return {
            "name": name,
            "type": "api_call",
            "description": f"{name} of the arguments",
            "api_call": {
                "method": "POST",
                "url": url + name,
                "json": {k: "{{ arguments." + k + " }}" for k in properties},
                "params_schema": {"type": "object", "properties": properties, "required": list(properties)},
            },
        }

    return [
        tool("length", {"s": {"type": "string"}}),
        tool("add", {"a": {"type": "number"}, "b": {"type": "number"}}),
        tool("sqrt", {"x": {"type": "number"}}),
    ]


def _three_turns(call: Call) -> Reply:
    """Length of 'abcde', plus 4, square root: one tool per turn, then the answer."""
    results = [json.loads(m["content"]) for m in call.messages if m["role"] == "tool"]
    if not results:
        return Reply(tool_calls=[("length", {"s": "abcde"})])
    if len(results) == 1:
        return Reply(tool_calls=[("add", {"a": results[0]["data"]["json"]["value"], "b": 4})])
    if len(results) == 2:
        return Reply(tool_calls=[("sqrt", {"x": results[1]["data"]["json"]["value"]})])
    return Reply(content=f"The answer is {results[2]['data']['json']['value']}")


@pytest.mark.parametrize("model", ["gpt-4o-mini", "claude-haiku-4-5"])
async def test_a_three_turn_tool_loop_runs_each_call_as_its_own_transition(mapi, script, model_server, model):
    script.reply = _three_turns
    with LocalServer(_calculator) as calculator:
        task = {
            "name": "calc",
            "tools": _calculator_tools(calculator.url),
            "main": [
                {
                    "prompt": "What is the square root of the length of 'abcde' plus 4?",
                    "tools": "all",
                    "auto_run_tools": True,
                    "unwrap": True,
                    "settings": {"model": model},
                }
            ],
        }
        execution, rows = await run_task(mapi, task)
    assert execution["status"] == "succeeded", execution["error"]
    assert execution["output"] == "The answer is 3.0"
    assert len(model_server.calls) == 4
    assert {t["name"] for t in model_server.calls[0].tools} == {"length", "add", "sqrt"}
    loop = [(r["metadata"].get("call"), r["metadata"].get("tool")) for r in rows if r["type"] == "step"]
    assert loop == [
        ("model", None), ("tool", "length"),
        ("model", None), ("tool", "add"),
        ("model", None), ("tool", "sqrt"),
        (None, None),
    ]  # fmt: skip
    tool_rows = [r for r in rows if r["metadata"].get("call") == "tool"]
    assert all(r["output"]["result"]["status"] == "success" for r in tool_rows)
    assert all(isinstance(r["output"]["result"]["duration_ms"], int) for r in tool_rows)
    # Every model call's tokens are counted once on the execution.
    total = sum(r["metadata"]["usage"]["prompt_tokens"] for r in rows if "usage" in r["metadata"])
    assert execution["usage"]["prompt_tokens"] == total


async def test_without_auto_run_the_step_returns_the_tool_calls(mapi, script):
    script.reply = lambda call: Reply(tool_calls=[("length", {"s": "xy"})])
    task = {
        "name": "manual",
        "tools": _calculator_tools("http://127.0.0.1:9/"),
        "main": [{"prompt": "?", "tools": ["length"]}, {"evaluate": {"calls": "$ _.choices[0].tool_calls"}}],
    }
    execution, _ = await run_task(mapi, task)
    (call,) = execution["output"]["calls"]
    assert call["function"]["name"] == "length" and json.loads(call["function"]["arguments"]) == {"s": "xy"}


async def test_a_function_tool_in_the_loop_is_answered_by_the_client(mapi, script, model_server):
    def model(call: Call) -> Reply:
        results = [m for m in call.messages if m["role"] == "tool"]
        if not results:
            return Reply(tool_calls=[("check_account", {"customer": "c-1"})])
        return Reply(content=f"status: {json.loads(results[0]['content'])['data']['status']}")

    script.reply = model
    task = {
        "name": "ask client",
        "tools": [
            {
                "name": "check_account",
                "type": "function",
                "function": {
                    "parameters": {"type": "object", "properties": {"customer": {"type": "string"}}}
                },
            }
        ],
        "main": [{"prompt": "How is c-1?", "tools": "all", "auto_run_tools": True, "unwrap": True}],
    }
    created = await create_task(mapi, (await create_agent(mapi))["id"], task)
    execution = await start(mapi, created["id"])
    await wait_for_status(mapi, execution["id"], {"awaiting_input"})
    rows = await transitions(mapi, execution["id"])
    wait = rows[-1]
    assert wait["type"] == "wait"
    assert wait["output"]["tool_call"]["name"] == "check_account"
    assert wait["output"]["tool_call"]["arguments"] == {"customer": "c-1"}
    answer = await mapi.put(
        f"/executions/{execution['id']}", json={"status": "running", "input": {"status": "active"}}
    )
    assert answer.status_code == 200, answer.text
    done = await wait_for_status(mapi, execution["id"])
    assert done["output"] == "status: active"


async def test_a_failing_tool_goes_back_to_the_model_unless_it_fails_the_step(mapi, script):
    def model(call: Call) -> Reply:
        results = [json.loads(m["content"]) for m in call.messages if m["role"] == "tool"]
        if not results:
            return Reply(tool_calls=[("broken", {})])
        return Reply(content=f"tool said {results[0]['status']}: {results[0]['error']['code']}")

    script.reply = model
    with LocalServer(lambda r: (503, {}, b"down")) as down:
        tool = {"name": "broken", "type": "api_call", "api_call": {"url": down.url}}
        step = {
            "prompt": "go",
            "tools": "all",
            "auto_run_tools": True,
            "unwrap": True,
            "retry": {"max_attempts": 1},
        }
        execution, _ = await run_task(mapi, {"name": "t", "tools": [tool], "main": [step]})
        assert execution["output"] == "tool said error: HttpUnavailable"
        execution, _ = await run_task(
            mapi, {"name": "t", "tools": [{**tool, "on_error": "fail"}], "main": [step]}
        )
    assert execution["status"] == "failed" and "503" in execution["error"]


async def test_max_turns_ends_a_loop_that_never_answers(mapi, script):
    script.reply = lambda call: Reply(tool_calls=[("length", {"s": "again"})])
    with LocalServer(_calculator) as calculator:
        task = {
            "name": "forever",
            "tools": _calculator_tools(calculator.url),
            "main": [{"prompt": "?", "tools": "all", "auto_run_tools": True, "max_turns": 2}],
        }
        execution, transitions = await run_task(mapi, task)
    assert execution["status"] == "failed"
    assert execution["error"].startswith("MaxTurnsExceeded: ") and "2 turns" in execution["error"]
    assert (
        transitions[-1]["type"] == "error" and transitions[-1]["metadata"]["error_type"] == "MaxTurnsExceeded"
    )


async def test_x_tool_parameters_are_hidden_from_the_model_and_filled_in(mapi, script, model_server):
    seen: list[dict[str, Any]] = []

    def record(request: Request) -> tuple[int, dict[str, str], bytes]:
        seen.append(json.loads(request.body))
        return 200, {}, b"{}"

    script.reply = lambda call: (
        Reply(content="done")
        if any(m["role"] == "tool" for m in call.messages)
        else Reply(tool_calls=[("account", {"query": "balance"})])
    )
    with LocalServer(record) as server:
        properties = {
            "customer_id": {"type": "integer"},
            "region": {"type": "string"},
            "query": {"type": "string"},
        }
        tool = {
            "name": "account",
            "type": "api_call",
            "api_call": {
                "method": "POST",
                "url": server.url,
                "json": {
                    "customer_id": "{{ arguments.customer_id }}",
                    "region": "{{ arguments.region }}",
                    "query": "{{ arguments.query }}",
                },
                "params_schema": {"type": "object", "properties": properties, "required": list(properties)},
            },
        }
        agent = (
            await mapi.post(
                "/agents",
                json={
                    "name": "a",
                    "metadata": {
                        "x-tool-parameters": {"api_call:account": {"customer_id": 1, "region": "eu"}}
                    },
                },
            )
        ).json()
        task = {
            "name": "partial",
            "metadata": {"x-tool-parameters": {"customer_id": 2}},
            "tools": [tool],
            "main": [{"prompt": "?", "tools": "all", "auto_run_tools": True, "unwrap": True}],
        }
        created = await create_task(mapi, agent["id"], task)
        response = await mapi.post(
            f"/tasks/{created['id']}/executions",
            json={"input": {}, "metadata": {"x-tool-parameters": {"api_call:account": {"customer_id": 3}}}},
        )
        done = await wait_for_status(mapi, response.json()["id"])
    assert done["status"] == "succeeded", done["error"]
    offered = model_server.calls[0].tools[0]["parameters"]
    assert set(offered["properties"]) == {"query"} and offered["required"] == ["query"]
    assert seen == [{"customer_id": 3, "region": "eu", "query": "balance"}]  # execution > task > agent


async def test_a_system_tool_creates_an_agent_for_the_executions_developer(mapi, script):
    script.reply = lambda call: (
        Reply(content="made")
        if any(m["role"] == "tool" for m in call.messages)
        else Reply(tool_calls=[("new_agent", {"name": "from the model"})])
    )
    task = {
        "name": "system",
        "tools": [
            {"name": "new_agent", "type": "system", "system": {"resource": "agent", "operation": "create"}},
            {"name": "agents", "type": "system", "system": {"call": "agent.list"}},
        ],
        "main": [
            {"tool": "new_agent", "arguments": {"name": "$ 'from a step'"}},
            {"prompt": "make one", "tools": ["new_agent"], "auto_run_tools": True, "unwrap": True},
            {"tool": "agents", "arguments": {"limit": 100}},
            {"evaluate": {"names": "$ [a['name'] for a in _]"}},  # a list, as Julep's agent.list
        ],
    }
    execution, rows = await run_task(mapi, task)
    assert execution["status"] == "succeeded", execution["error"]
    assert {"from a step", "from the model"} <= set(execution["output"]["names"])
    made = rows[1]["output"]
    assert (await mapi.get(f"/agents/{made['id']}")).json()["name"] == "from a step"


async def test_an_mcp_tool_is_listed_and_called_on_a_local_mcp_server(mapi, script, model_server):
    script.reply = lambda call: (
        Reply(content=f"sum is {json.loads(call.messages[-1]['content'])['data']}")
        if call.messages[-1]["role"] == "tool"
        else Reply(tool_calls=[("adder", {"a": 2, "b": 3})])
    )
    tool = {
        "name": "adder",
        "type": "integration",
        "integration": {"provider": "mcp", "method": "add", "setup": {"server": "calc"}},
    }
    task = {
        "name": "mcp",
        "tools": [tool],
        "main": [
            {"tool": "adder", "arguments": {"a": 40, "b": 2}},
            {"prompt": "2 + 3?", "tools": "all", "auto_run_tools": True, "unwrap": True},
        ],
    }
    execution, rows = await run_task(mapi, task)
    assert execution["status"] == "succeeded", execution["error"]
    assert rows[1]["output"] == 42
    assert execution["output"] == "sum is 5"
    offered = model_server.calls[0].tools[0]
    assert offered["description"] == "Add two numbers." and set(offered["parameters"]["properties"]) == {
        "a",
        "b",
    }


async def test_an_unconfigured_mcp_server_is_refused(mapi):
    tool = {
        "name": "shell",
        "type": "integration",
        "integration": {"provider": "mcp", "method": "x", "setup": {"server": "bash"}},
    }
    execution, _ = await run_task(
        mapi, {"name": "m", "tools": [tool], "main": [{"tool": "shell", "arguments": {}}]}
    )
    assert execution["status"] == "failed" and "unknown MCP server 'bash'" in execution["error"]


async def test_a_rate_limited_model_is_retried_and_a_refused_request_is_not(mapi, script, model_server):
    answers = iter([Reply(status=429, content="slow down"), Reply(content="fine")])
    script.reply = lambda call: next(answers)
    execution, rows = await run_task(
        mapi, {"name": "r", "main": [{"prompt": "?", "unwrap": True, "retry": {"initial_interval": 0.1}}]}
    )
    assert execution["output"] == "fine" and rows[1]["metadata"]["attempts"] == 2
    script.reply = lambda call: Reply(status=400, content=f"bad request from key {OPENAI_KEY}")
    model_server.calls.clear()
    execution, _ = await run_task(mapi, {"name": "r", "main": [{"prompt": "?"}]})
    assert execution["status"] == "failed" and "400" in execution["error"]
    assert len(model_server.calls) == 1  # a 4xx is not retried
    assert OPENAI_KEY not in execution["error"] and "[redacted]" in execution["error"]


async def test_api_keys_appear_in_no_transition_history_or_log(
    mapi, temporal_env, model_server, script, caplog
):
    caplog.set_level(logging.DEBUG)
    answers = iter([Reply(status=500, content="overloaded"), Reply(content="ok")])
    script.reply = lambda call: next(answers, Reply(content="ok"))
    task = {
        "name": "k",
        "main": [
            {"prompt": "hello", "retry": {"initial_interval": 0.1}},
            {"prompt": "again", "settings": {"model": "claude-haiku-4-5"}},
        ],
    }
    execution, rows = await run_task(mapi, task)
    assert execution["status"] == "succeeded", execution["error"]
    assert model_server.calls[0].headers["authorization"] == f"Bearer {OPENAI_KEY}"  # the key was used
    history = await temporal_env.client.get_workflow_handle(execution["id"]).fetch_history()
    logged = "\n".join(f"{r.getMessage()} {r.args!r} {r.exc_text or ''}" for r in caplog.records)
    assert "call_model" in logged  # the failed attempt was logged
    for text in (json.dumps(rows), json.dumps(execution), history.to_json(), logged):
        assert OPENAI_KEY not in text and ANTHROPIC_KEY not in text


async def test_a_developers_own_model_key_comes_from_their_secrets(mapi, model_server):
    """OPENAI_API_KEY as a developer secret is used for their calls, an agent's own over the developer's."""
    own_key, agents_key = "sk-developer-own-4b1e", "sk-agent-own-9c2d"
    await mapi.post("/secrets", json={"name": "OPENAI_API_KEY", "value": own_key})
    model_server.calls.clear()
    execution, rows = await run_task(mapi, {"name": "k", "main": [{"prompt": "hi"}]})
    assert execution["status"] == "succeeded", execution["error"]
    assert model_server.calls[-1].headers["authorization"] == f"Bearer {own_key}"
    agent = await create_agent(mapi)
    await mapi.post(f"/agents/{agent['id']}/secrets", json={"name": "OPENAI_API_KEY", "value": agents_key})
    execution, _ = await run_task(mapi, {"name": "k", "main": [{"prompt": "hi"}]}, agent_id=agent["id"])
    assert model_server.calls[-1].headers["authorization"] == f"Bearer {agents_key}"
    assert own_key not in json.dumps(rows) and agents_key not in json.dumps(execution)


async def test_a_chats_agents_each_call_with_their_own_model_key(mapi, model_server):
    """A chat reads each answering agent's provider key ahead of its call: each agent's own key is used."""
    keys = ["sk-chat-agent-one-5e1f", "sk-chat-agent-two-7a3c"]
    agents = [await create_agent(mapi), await create_agent(mapi)]
    for agent, key in zip(agents, keys, strict=True):
        await mapi.post(f"/agents/{agent['id']}/secrets", json={"name": "OPENAI_API_KEY", "value": key})
    session = (await mapi.post("/sessions", json={"agents": [a["id"] for a in agents]})).json()
    for stream in (False, True):
        model_server.calls.clear()
        body = {"messages": [{"role": "user", "content": "hi"}], "stream": stream}
        answered = await mapi.post(f"/sessions/{session['id']}/chat", json=body)
        assert answered.status_code in (200, 201), answered.text
        assert [c.headers["authorization"] for c in model_server.calls] == [f"Bearer {k}" for k in keys]


async def test_models_lists_what_the_configured_providers_serve(mapi):
    models = {m["id"] for m in (await mapi.get("/agents/models")).json()["models"]}
    assert {"gpt-4o-mini", "gpt-4o"} <= models and "claude-haiku-4-5" in models


def _coach(call: Call) -> str:
    prompt = _last_user(call)
    if prompt.startswith("You are a motivational coach"):
        topic = "focus" if "focus topic" in prompt else "rest"
        return f"- {topic}: start small\n- {topic}: keep going"
    assert prompt.startswith("Write a short motivational poem about - ")
    return f"A poem, day {len(call.messages)}: {prompt.split('about ', 1)[1].splitlines()[0]}"


async def test_the_seeds_daily_motivation_runs_as_written(
    postgres_url, time_skipping_env, api_key, model_server, script
):
    """Random topic, two prompts, send_email answered by the client, a one-day sleep, and `main` again."""
    script.reply = _coach
    async with BackgroundStack(
        postgres_url,
        temporal_address(time_skipping_env),
        task_queue=f"daily-{uuid.uuid4()}",
        openai_api_key=OPENAI_KEY,
        openai_base_url=model_server.openai_base_url,
    ) as stack:
        async with httpx.AsyncClient(
            base_url=stack.url, headers={"Authorization": f"Bearer {api_key}"}
        ) as api:
            agent = await create_agent(api)
            task = await create_task(api, agent["id"], (EXAMPLES / "daily_motivation.yaml").read_text())
            user = {"about_user": "a developer", "topics": ["focus", "rest"]}
            execution = await start(api, task["id"], user)
            emails = []
            for _ in range(3):  # three days
                await wait_for_status(api, execution["id"], {"awaiting_input"})
                wait = (await transitions_tail(api, execution["id"]))[-1]
                call = wait["output"]["tool_call"]
                assert call["name"] == "send_email" and call["arguments"]["subject"] == "Daily Motivation"
                emails.append(call["arguments"]["content"])
                resumed = await api.put(
                    f"/executions/{execution['id']}", json={"status": "running", "input": {"sent": True}}
                )
                assert resumed.status_code == 200, resumed.text
                await wait_for_status(api, execution["id"], {"running"})
                await time_skipping_env.sleep(timedelta(days=1, minutes=1))
            assert all(e.startswith("A poem, day 1: - ") for e in emails), emails
            assert {e.split("- ")[1].split(":")[0] for e in emails} <= {"focus", "rest"}
            done = (await api.get(f"/executions/{execution['id']}")).json()
            assert done["status"] in ("running", "awaiting_input")
            assert done["usage"]["prompt_tokens"] > 0  # six prompts so far, all counted


async def transitions_tail(api: httpx.AsyncClient, execution_id: str) -> list[dict[str, Any]]:
    response = await api.get(
        f"/executions/{execution_id}/transitions", params={"direction": "desc", "limit": 5}
    )
    return list(reversed(response.json()["items"]))


async def test_a_recorded_run_replays_offline(
    postgres_url, temporal_env, api_key, model_server, script, tmp_path
):
    """Record once against a model, then run with no model at all from the recording."""
    script.reply = lambda call: f"recorded answer to {_last_user(call)}"
    recording = tmp_path / "models.jsonl"
    task = {
        "name": "offline",
        "main": [
            {"evaluate": {"n": "$ randint(1000)"}},
            {"prompt": "Pick a name for {{_.n}}", "unwrap": True},
            {"prompt": [{"role": "user", "content": "Shout {{_}}"}], "unwrap": True},
        ],
    }
    outputs = []
    for settings in (
        {
            "openai_api_key": OPENAI_KEY,
            "openai_base_url": model_server.openai_base_url,
            "model_record": str(recording),
        },
        {"model_replay": str(recording)},  # no key, no server
    ):
        async with BackgroundStack(
            postgres_url, temporal_address(temporal_env), task_queue=f"rec-{uuid.uuid4()}", **settings
        ) as stack:
            async with httpx.AsyncClient(
                base_url=stack.url, headers={"Authorization": f"Bearer {api_key}"}
            ) as api:
                model_server.calls.clear()
                execution, _ = await run_task(api, task)
                assert execution["status"] == "succeeded", execution["error"]
                outputs.append((execution["output"], len(model_server.calls)))
                if "model_replay" in settings:
                    missing = {"name": "never recorded", "main": [{"prompt": "hi"}]}
                    failed, _ = await run_task(api, missing)
                    assert "no recorded model response for step never recorded:main[0]" in failed["error"]
    (recorded, live_calls), (replayed, replay_calls) = outputs
    assert recorded.startswith("recorded answer to Shout recorded answer to Pick a name for ")
    assert live_calls == 2 and replay_calls == 0
    # The random number differs between the runs, so the replay matched by step, not by exact request.
    assert replayed.startswith("recorded answer to Shout")


async def test_the_daily_motivation_example_runs_offline_from_its_recording(
    postgres_url, temporal_env, api_key
):
    recording = EXAMPLES / "recordings.jsonl"
    async with BackgroundStack(
        postgres_url,
        temporal_address(temporal_env),
        task_queue=f"offline-{uuid.uuid4()}",
        model_replay=str(recording),
    ) as stack:
        async with httpx.AsyncClient(
            base_url=stack.url, headers={"Authorization": f"Bearer {api_key}"}
        ) as api:
            task = await create_task(
                api, (await create_agent(api))["id"], (EXAMPLES / "daily_motivation.yaml").read_text()
            )
            execution = await start(
                api, task["id"], {"about_user": "a developer", "topics": ["focus", "rest"]}
            )
            await wait_for_status(api, execution["id"], {"awaiting_input"})
            call = (await transitions_tail(api, execution["id"]))[-1]["output"]["tool_call"]
            poem = json.loads(recording.read_text().splitlines()[1])["response"]["choices"][0]["message"][
                "content"
            ]
            assert call == {
                "type": "function",
                "name": "send_email",
                "arguments": {"subject": "Daily Motivation", "content": poem},
            }
            await api.put(f"/executions/{execution['id']}", json={"status": "cancelled", "reason": "done"})


async def test_a_model_call_longer_than_the_heartbeat_timeout_is_not_retried(mapi, script, model_server):
    """Model calls heartbeat while they wait, so a slow answer (11 s, past the 10 s heartbeat timeout) is
    awaited, not timed out and asked again."""

    def slow(call: Call) -> str:
        time.sleep(11)
        return "worth the wait"

    script.reply = slow
    execution, _ = await run_task(
        mapi, {"name": "slow", "main": [{"prompt": "take your time", "unwrap": True}]}
    )
    assert execution["output"] == "worth the wait"
    assert len(model_server.calls) == 1
