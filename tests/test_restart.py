"""Restart from a step: POST /executions/{id}/restart keeps the original's transitions
before the step and runs again from there, through the HTTP API on the real stack."""

from __future__ import annotations

import json
import uuid
from typing import Any

from tests.helpers import create_agent, create_task, run_task, start, transitions, wait_for_status
from tests.local_http import LocalServer, Request
from tests.model_server import Call, Reply

KEPT = ("type", "output", "current", "next", "step_label", "metadata", "created_at")


def _same(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: r[k] for k in KEPT} for r in rows]


async def _restart(api, execution_id: str, body: dict[str, Any]) -> dict[str, Any]:
    response = await api.post(f"/executions/{execution_id}/restart", json=body)
    assert response.status_code == 201, response.text
    restarted = response.json()
    assert restarted["restarted_from"] == execution_id
    return await wait_for_status(api, restarted["id"])


async def test_a_failed_execution_goes_on_from_the_failing_step_once_the_tool_is_fixed(api):
    broken = {"on": True}

    def respond(request: Request) -> tuple[int, dict[str, str], bytes]:
        return (500, {}, b"down") if broken["on"] else (200, {}, b"fixed")

    with LocalServer(respond) as server:
        task = {
            "name": "flaky",
            "tools": [{"name": "fetch", "type": "api_call", "api_call": {"url": server.url + "x"}}],
            "main": [
                {"label": "start", "evaluate": {"n": "$ _.n + 1"}},
                {"set": {"seen": "$ _.n"}},
                {"tool": "fetch", "arguments": {}, "retry": {"max_attempts": 1}},
                {
                    "evaluate": {
                        "body": "$ _['content']",
                        "seen": "$ state.seen",
                        "first": "$ steps['start'].output.n",
                        "started_with": "$ steps['start'].input.n",
                    }
                },
            ],
        }
        failed, rows = await run_task(api, task, {"n": 1})
        assert failed["status"] == "failed", failed
        error = next(r for r in rows if r["type"] == "error")
        assert error["current"]["step"] == 2  # the tool call

        broken["on"] = False  # the tool is fixed
        done = await _restart(api, failed["id"], {"from_transition": error["id"]})
    assert done["status"] == "succeeded", done["error"]
    assert done["output"] == {"body": "fixed", "seen": 2, "first": 2, "started_with": 1}
    assert done["input"] == failed["input"]
    again = await transitions(api, done["id"])
    kept = [r for r in rows if r["type"] != "error"]  # init and the two steps before the tool call
    assert _same(again[: len(kept)]) == _same(kept)
    assert {r["id"] for r in again}.isdisjoint({r["id"] for r in rows})
    assert [r["type"] for r in again[len(kept) :]] == ["step", "step", "finish"]
    assert len(server.requests) == 2  # the failed call, then the restarted one: nothing before re-ran


async def test_restart_with_a_new_input_for_the_step(api):
    task = {
        "name": "sums",
        "main": [{"evaluate": {"double": "$ _.n * 2"}}, {"evaluate": {"plus": "$ _.double + 1"}}],
    }
    first, rows = await run_task(api, task, {"n": 1})
    assert first["output"] == {"plus": 3}
    second_step = next(r for r in rows if r["type"] == "step" and r["current"]["step"] == 1)

    done = await _restart(api, first["id"], {"from_transition": second_step["id"], "input": {"double": 10}})
    assert done["status"] == "succeeded", done["error"]
    assert done["output"] == {"plus": 11}
    again = await transitions(api, done["id"])
    assert _same(again[:2]) == _same(rows[:2])  # init and main[0], as the original recorded them

    same = await _restart(api, first["id"], {"from_transition": second_step["id"]})
    assert same["output"] == {"plus": 3}  # without an input the step reads what it read before

    init = rows[0]
    fresh = await _restart(api, first["id"], {"from_transition": init["id"], "input": {"n": 5}})
    assert fresh["output"] == {"plus": 11} and fresh["input"] == {"n": 5}


async def test_restart_refuses_what_it_cannot_do(api):
    agent = await create_agent(api)
    task = await create_task(api, agent["id"], {"name": "one", "main": [{"evaluate": {"x": "$ 1"}}]})
    execution = await wait_for_status(api, (await start(api, task["id"]))["id"])
    rows = await transitions(api, execution["id"])
    finish = rows[-1]
    after_end = await api.post(
        f"/executions/{execution['id']}/restart", json={"from_transition": finish["id"]}
    )
    assert after_end.status_code == 422 and "nothing to run again" in after_end.text, after_end.text
    other = await api.post(
        f"/executions/{execution['id']}/restart", json={"from_transition": rows[0]["id"][:-4] + "0000"}
    )
    assert other.status_code == 404, other.text
    typed = {
        "name": "typed",
        "input_schema": {"type": "object", "required": ["n"]},
        "main": [{"evaluate": {"n": "$ _.n"}}],
    }
    typed_task = await create_task(api, agent["id"], typed)
    ran = await wait_for_status(api, (await start(api, typed_task["id"], {"n": 1}))["id"])
    init = (await transitions(api, ran["id"]))[0]
    bad = await api.post(
        f"/executions/{ran['id']}/restart", json={"from_transition": init["id"], "input": {}}
    )
    assert bad.status_code == 422 and "input_schema" in bad.text, bad.text
    missing = await api.post(f"/executions/{execution['id']}/restart", json={})
    assert missing.status_code == 422 and "from_transition" in missing.text, missing.text


async def test_a_restart_rebuilds_state_and_labels_from_branches_and_yields(api):
    task = {
        "name": "nested",
        "main": [
            {
                "if": "$ True",
                "then": [
                    {"label": "inner", "evaluate": {"v": "$ _.n * 10"}},
                    {"set": {"from_branch": "$ _.v"}},
                ],
            },
            {"workflow": "helper", "arguments": "$ {'m': 3}"},
            {"if": "$ not _.get('ok')", "then": {"error": "not ok"}},
            {
                "evaluate": {
                    "branch": "$ state.from_branch",
                    "helper": "$ state.from_helper",
                    "inner_in": "$ steps['inner'].input.n",
                    "inner_out": "$ steps['inner'].output.v",
                }
            },
        ],
        "helper": [{"set": {"from_helper": "$ _.m"}}],
    }
    failed, rows = await run_task(api, task, {"n": 1})
    assert failed["status"] == "failed" and "not ok" in failed["error"], failed
    error = next(r for r in rows if r["type"] == "error")
    done = await _restart(api, failed["id"], {"from_transition": error["id"], "input": {"ok": True}})
    assert done["status"] == "succeeded", done["error"]
    assert done["output"] == {"branch": 10, "helper": 3, "inner_in": 1, "inner_out": 10}


def _verdict_or_echo(call: Call) -> Reply:
    """The model: a guardrail's call (JSON under a schema) is allowed, any other gets the echo."""
    if (call.body.get("response_format") or {}).get("type") == "json_schema":
        return Reply(content=json.dumps({"allowed": True, "reason": "fine"}))
    return Reply(content=f"echo: {call.messages[-1]['content']}")


def _shape(item: dict[str, Any]) -> tuple[Any, ...]:
    data = item["data"]
    return (item["type"], data.get("workflow"), data.get("step"), data.get("name"))


async def test_a_restart_keeps_the_input_guardrails_verdicts_and_has_a_trace(mapi, script, model_server):
    script.reply = _verdict_or_echo
    task = {
        "name": "guarded",
        "guardrails": {
            "input": [
                {"name": "small_n", "check": "$ _.get('n', 0) < 100", "message": "n is too big"},
                {"name": "judge", "prompt": "Is {{ _ }} fine?", "model": "gpt-4o-mini"},
            ]
        },
        "main": [{"set": {"seen": "$ _.n"}}, {"evaluate": {"state": "$ state", "got": "$ _"}}],
    }
    first, rows = await run_task(mapi, task, {"n": 1})
    assert first["status"] == "succeeded", first["error"]
    assert first["output"] == {"state": {"seen": 1}, "got": {"seen": 1}}
    verdict, second_step = rows[1], rows[3]
    assert verdict["metadata"]["guardrail"] == "judge" and second_step["current"]["step"] == 1
    model_server.calls.clear()

    # From main[1]: the guardrails' checks are kept, not run again; the kept verdict is no `set` output.
    done = await _restart(mapi, first["id"], {"from_transition": second_step["id"]})
    assert done["status"] == "succeeded", done["error"]
    assert done["output"] == {"state": {"seen": 1}, "got": {"seen": 1}}
    assert model_server.calls == []  # the judge's verdict was kept
    again = await transitions(mapi, done["id"])
    assert _same(again[:3]) == _same(rows[:3])

    # Its trace: its own trace id, the kept part as the original recorded it (the same times), then its own.
    response = await mapi.get(f"/executions/{done['id']}/trace")
    assert response.status_code == 200, response.text
    trace = response.json()
    assert trace["trace_id"] == uuid.UUID(done["id"]).hex
    original = (await mapi.get(f"/executions/{first['id']}/trace")).json()["items"]
    assert [_shape(i) for i in trace["items"]] == [_shape(i) for i in original]
    kept = next(n for n, i in enumerate(original) if _shape(i)[:3] == ("step_start", "main", 1))
    assert [i["at"] for i in trace["items"][:kept]] == [i["at"] for i in original[:kept]]
    assert {"guardrail", "llm_call_end"} <= {i["type"] for i in trace["items"][:kept]}

    # From the start with a new input it is a fresh run: the input guardrails check that input.
    fresh = await _restart(mapi, first["id"], {"from_transition": rows[0]["id"], "input": {"n": 500}})
    assert fresh["status"] == "failed"
    assert fresh["error"] == "InputGuardrailTripwire: n is too big"
    fresh_rows = await transitions(mapi, fresh["id"])
    assert [r["type"] for r in fresh_rows] == ["init", "error"]
    assert fresh_rows[-1]["metadata"]["guardrail"] == "small_n"


async def test_a_restart_with_a_new_input_runs_the_input_guardrails_on_it(mapi, script, model_server):
    script.reply = _verdict_or_echo
    task = {
        "name": "guarded",
        "guardrails": {
            "input": [
                {"name": "small_n", "check": "$ _.get('n', 0) < 100", "message": "n is {{ _.n }}, too big"},
                {"name": "judge", "prompt": "Is n={{ _.n }} fine?", "model": "gpt-4o-mini"},
            ]
        },
        "main": [{"set": {"seen": "$ _.n"}}, {"evaluate": {"got": "$ _"}}],
    }
    first, rows = await run_task(mapi, task, {"n": 1})
    assert first["status"] == "succeeded", first["error"]
    second_step = next(r for r in rows if r["type"] == "step" and r["current"]["step"] == 1)
    model_server.calls.clear()

    # A new input for main[1] is checked before main[1] runs, as the execution's input was before main[0].
    refused = await _restart(mapi, first["id"], {"from_transition": second_step["id"], "input": {"n": 500}})
    assert refused["status"] == "failed"
    assert refused["error"] == "InputGuardrailTripwire: n is 500, too big"
    again = await transitions(mapi, refused["id"])
    assert [r["type"] for r in again[3:]] == ["error"]  # after the kept init, verdict and main[0]
    assert again[-1]["current"]["step"] == 1
    assert again[-1]["metadata"] == {"error_type": "InputGuardrailTripwire", "guardrail": "small_n"}
    assert model_server.calls == []  # the check refused before the judge was asked

    passed = await _restart(mapi, first["id"], {"from_transition": second_step["id"], "input": {"n": 50}})
    assert passed["status"] == "succeeded", passed["error"]
    assert passed["output"] == {"got": {"n": 50}}
    (asked,) = model_server.calls  # the judge, on the new input
    assert asked.messages[-1]["content"] == "Is n=50 fine?"
    again = await transitions(mapi, passed["id"])
    verdict = again[3]
    assert verdict["metadata"]["guardrail"] == "judge" and verdict["current"]["step"] == 1
    assert [r["type"] for r in again[4:]] == ["step", "finish"]
