"""Record the Temporal histories that tests/test_replay.py replays against the current workflow code.

Run `python -m tests.record_histories [NAME ...]` after a deliberate, compatible change to the interpreter
(or to record a new scenario), and commit tests/histories/. A change that breaks these replays would break executions already running in production.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

import httpx
from temporalio.client import WorkflowFailureError
from temporalio.testing import WorkflowEnvironment

from contracts.executions import ResumeInput
from contracts.temporal import RESUME_SIGNAL
from tests.local_http import LocalServer
from tests.model_server import Call, ModelServer, Reply
from tests.stack import LocalMint

FOLDER = Path(__file__).parent / "histories"

# Representative executions: each exercises a different part of the interpreter.
SCENARIOS: dict[str, tuple[dict[str, Any], Any, Any]] = {
    "pure_steps": (
        {
            "name": "pure",
            "main": [
                {"evaluate": {"pick": "$ randint(1000)", "now": "$ datetime.now().isoformat()"}},
                {
                    "if": "$ _.pick >= 0",
                    "then": {"set": {"seen": "$ _.pick"}},
                    "else": {"error": "impossible"},
                },
                {
                    "switch": [
                        {"case": "$ False", "then": {"log": "no"}},
                        {"case": "_", "then": {"get": "seen"}},
                    ]
                },
                {"foreach": {"in": "$ [1, 2]", "do": {"evaluate": {"x": "$ _ * 2"}}}},
                {"return": {"seen": "$ state['seen']"}},
            ],
        },
        {},
        None,
    ),
    "fan_out": (
        {
            "name": "fan",
            "main": [
                {
                    "over": "$ list(range(6))",
                    "map": {"evaluate": {"x": "$ _ + 1"}},
                    "parallelism": 2,
                    "reduce": "$ results + _['x']",
                    "initial": 0,
                },
                {"parallel": [{"evaluate": {"a": "$ 1"}}, {"sleep": {"seconds": 1}}]},
            ],
        },
        {},
        None,
    ),
    "wait_and_resume": (
        {
            "name": "approve",
            "main": [
                {"wait_for_input": {"info": {"question": "$ 'ok?'"}}},
                {"evaluate": {"answer": "$ _['approved']"}},
            ],
        },
        {},
        {"approved": True},
    ),
    "yields": (
        {
            "name": "count",
            "main": [{"workflow": "count", "arguments": {"n": "$ 3"}}, {"evaluate": {"done": "$ _['n']"}}],
            "count": [
                {"if": "$ _['n'] <= 0", "then": {"return": "$ _"}},
                {"workflow": "count", "arguments": {"n": "$ _['n'] - 1"}},
            ],
        },
        {},
        None,
    ),
    "chunked_fan_out": (
        {
            "name": "chunked",
            "main": [
                {
                    "over": "$ list(range(260))",
                    "map": [{"sleep": {"seconds": 0.01}}, {"evaluate": {"x": "$ _ * 2"}}],
                    "parallelism": 20,
                    "reduce": "$ results + _['x']",
                    "initial": 0,
                }
            ],
        },
        {},
        None,
    ),
    "failure": ({"name": "fail", "main": [{"evaluate": {"x": "$ 1"}}, {"error": "stop here"}]}, {}, None),
    # Recorded before a log step passed its input through: the log's output was its text, so the
    # `if` slept. Replaying must still sleep, or the timer in this history would not match.
    "log_text_output": (
        {
            "name": "logged",
            "main": [
                {"evaluate": {"n": "$ 2"}},
                {"log": "n is {{ _.n }}"},
                {
                    "if": "$ _ == 'n is 2'",
                    "then": {"sleep": {"seconds": 1}},
                    "else": {"evaluate": {"x": "$ 1"}},
                },
                {"over": "$ list(range(40))", "map": {"evaluate": {"y": "$ _"}}, "reduce": "$ results + [_]"},
            ],
        },
        {},
        None,
    ),
    # Recorded before a yield at the end of an `if` branch was a tail call: each round nested, and
    # unwinding 100 rounds wrote enough transitions for a second batch, a local activity this history holds.
    # Call steps in the worker (local activities carrying transitions and answers), one after another and in
    # a map: a system tool, so that recording needs no server but Mint.
    "calls_in_worker": (
        {
            "name": "calls",
            "tools": [{"name": "agents", "type": "system", "system": {"call": "agent.list"}}],
            "main": [
                {"tool": "agents", "arguments": {}},
                {"evaluate": {"n": "$ len(_)"}},
                {"tool": "agents", "arguments": {}},
                {"over": "$ [1, 2, 3]", "map": {"tool": "agents", "arguments": {}}, "parallelism": 2},
                {"evaluate": {"rounds": "$ len(_)"}},
            ],
        },
        {},
        None,
    ),
    # What the Temporal UI shows (workflows/visibility.py): a workflow started with Mint's search attributes
    # sets MintStatus as its status changes (waiting, resumed, the end), and its activities, markers and timers
    # carry summaries.
    "ui_status": (
        {
            "name": "inspected",
            "tools": [{"name": "agents", "type": "system", "system": {"call": "agent.list"}}],
            "main": [
                {"label": "look", "tool": "agents", "arguments": {}},
                {"label": "approve", "wait_for_input": {"info": {"question": "$ 'ship it?'"}}},
                {"sleep": {"seconds": 0.1}},
                {"evaluate": {"answer": "$ steps['approve'].output"}},
            ],
        },
        {},
        "yes",
    ),
    # Guardrails: the input passes its check, a tool call runs, and the output guardrail trips; the
    # error transition names it.
    "guardrail_trip": (
        {
            "name": "guarded",
            "tools": [{"name": "agents", "type": "system", "system": {"call": "agent.list"}}],
            "guardrails": {
                "input": [{"name": "has_n", "check": "$ 'n' in _", "message": "the input needs an n"}],
                "output": [{"name": "small", "check": "$ _.n < 3", "message": "n is {{ _.n }}, over 2"}],
            },
            "main": [{"tool": "agents", "arguments": {}}, {"evaluate": {"n": "$ len(_) + 10"}}],
        },
        {"n": 1},
        None,
    ),
    # Recorded before the integration providers: a `brave` tool was "not available", and the step
    # failed at once, with no activity. Replaying must still fail it so (workflows/calls.py,
    # INTEGRATIONS_PATCH); recorded again today, the call would run.
    "integration_before_providers": (
        {
            "name": "search",
            "tools": [{"name": "search", "type": "integration", "integration": {"provider": "brave"}}],
            "main": [{"evaluate": {"q": "$ 'mint'"}}, {"tool": "search", "arguments": {"query": "$ _.q"}}],
        },
        {},
        None,
    ),
    "nested_branch_yields": (
        {
            "name": "rounds",
            "main": [
                {
                    "if": "$ _.i < 100",
                    "then": [
                        {"evaluate": {"i": "$ _.i", "half": "$ _.i // 2"}},
                        {"evaluate": {"i": "$ _.i"}},
                        {"workflow": "main", "arguments": {"i": "$ _.i + 1"}},
                    ],
                    "else": {"return": "$ _.i"},
                }
            ],
        },
        {"i": 0},
        None,
    ),
}


def _by_reference_model(call: Call) -> Reply:
    """The by_reference scenario's model: list the agents, pass the lists by reference, then answer."""
    results = [json.loads(m["content"]) for m in call.messages if m["role"] == "tool"]
    if not results:
        return Reply(tool_calls=[("agents", {})])
    if len(results) == 1:
        listed = results[0]["data"]["reference"]  # the list became a variable: the model read its name
        return Reply(
            tool_calls=[
                ("publish", {"report": "<<var:report>>", "agents": listed}),
                ("agents", {"limit": "<<var:missing>>"}),
            ]
        )
    return Reply(content="published")


async def _record(
    api: httpx.AsyncClient,
    env: WorkflowEnvironment,
    agent_id: str,
    name: str,
    scenario: tuple[dict[str, Any], Any, Any] | None = None,
) -> None:
    task, input_, resume = scenario or SCENARIOS[name]
    created = (await api.post(f"/agents/{agent_id}/tasks", json=task)).json()
    execution = (await api.post(f"/tasks/{created['id']}/executions", json={"input": input_})).json()
    while True:
        status = (await api.get(f"/executions/{execution['id']}")).json()["status"]
        if status == "awaiting_input" and resume is not None:
            await api.put(f"/executions/{execution['id']}", json={"status": "running", "input": resume})
            resume = None
        if status in ("succeeded", "failed"):
            break
        await asyncio.sleep(0.05)
    handle = env.client.get_workflow_handle(execution["id"])
    # The row says how it ended a moment before the workflow's last task completes: record that task too.
    with contextlib.suppress(WorkflowFailureError):
        await handle.result()
    history = await handle.fetch_history()
    (FOLDER / f"{name}.json").write_text(json.dumps(json.loads(history.to_json()), indent=1) + "\n")
    print(f"recorded {name}: {status}, {len(history.events)} events")


# Scenarios whose prompts a scripted model answers (tests/model_server.py), each set up by its function.
HANDOFF_TASK = {
    "name": "help desk",
    "main": [
        {"prompt": "Is my invoice paid?", "auto_run_tools": True, "unwrap": True},
        {"evaluate": {"answer": "$ _"}},
    ],
}


def _handoff_model(call: Call) -> Reply:
    """Triage transfers to billing, which calls its own tool, then answers."""
    system = " ".join(m["content"] for m in call.messages if m["role"] == "system")
    if "Billing" not in system:
        return Reply(tool_calls=[("transfer_to_billing", {})])
    if sum(m["role"] == "tool" for m in call.messages) < 2:
        return Reply(tool_calls=[("agents", {})])
    return Reply(content="billing: paid")


async def _record_handoff(api: httpx.AsyncClient, env: WorkflowEnvironment) -> None:
    """A prompt step handed from one agent to another: the transfer adds no command of its own."""
    billing = (
        await api.post(
            "/agents", json={"name": "billing", "instructions": "Billing desk.", "model": "gpt-4o-mini"}
        )
    ).json()
    tool = {"name": "agents", "type": "system", "system": {"call": "agent.list"}}
    await api.post(f"/agents/{billing['id']}/tools", json=tool)
    triage = (
        await api.post(
            "/agents", json={"name": "triage", "model": "gpt-4o-mini", "handoffs": [billing["id"]]}
        )
    ).json()
    await _record(api, env, triage["id"], "handoff", (HANDOFF_TASK, {}, None))


# Pass by reference: a state value and a tool result become variables, the model passes both
# to a by-reference function tool (answered through the resume) and names a variable there is not (an
# error result, no call). The model is tests/model_server.py, scripted by _by_reference_model.
BY_REFERENCE = (
    {
        "name": "by reference",
        "tools": [
            {"name": "agents", "type": "system", "system": {"call": "agent.list"}},
            {
                "name": "publish",
                "type": "function",
                "function": {
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "report": {"type": "string", "x-by-reference": True},
                            "agents": {"type": "array", "x-by-reference": True},
                        },
                        "required": ["report", "agents"],
                    }
                },
            },
        ],
        "main": [
            {"set": {"report": "$ 'all quiet ' * 20"}},
            {
                "prompt": "Publish the report with the agents.",
                "tools": "all",
                "auto_run_tools": True,
                "unwrap": True,
                "settings": {
                    "model": "gpt-4o-mini",
                    "pass_by_reference": True,
                    "reference_threshold": 10,
                },
            },
        ],
    },
    {},
    {"published": True},
)


async def _record_by_reference(api: httpx.AsyncClient, env: WorkflowEnvironment) -> None:
    agent = (await api.post("/agents", json={"name": "recorder"})).json()
    await _record(api, env, agent["id"], "by_reference", BY_REFERENCE)


# Recorded before a resume that comes before its wait opens was kept for it (workflows/inbox.py,
# EARLY_RESUME_PATCH in workflows/waits.py): the early resume was dropped and a second one answered the wait.
# Replaying it must not fail (the patch keeps it dropped); recorded again today, the early one would answer.
EARLY_RESUME_TASK = {
    "name": "early",
    "main": [
        {"evaluate": {"x": "$ 1"}},
        {"sleep": {"seconds": 1}},
        {"wait_for_input": {"info": {"question": "$ 'ok?'"}}},
        {"evaluate": {"answer": "$ _"}},
    ],
}


async def _record_early_resume(api: httpx.AsyncClient, env: WorkflowEnvironment, agent_id: str) -> None:
    """A resume addressed to the wait (seq 4) while the execution still sleeps before it, as a worker lost
    after writing the wait leaves it; then the resume a client sends once the execution waits."""
    created = (await api.post(f"/agents/{agent_id}/tasks", json=EARLY_RESUME_TASK)).json()
    execution = (await api.post(f"/tasks/{created['id']}/executions", json={"input": {}})).json()
    handle = env.client.get_workflow_handle(execution["id"])
    while len((await api.get(f"/executions/{execution['id']}/transitions")).json()["items"]) < 2:
        await asyncio.sleep(0.05)
    await handle.signal(RESUME_SIGNAL, ResumeInput(wait_seq=4, input="early"))
    resume = "late"
    while True:
        status = (await api.get(f"/executions/{execution['id']}")).json()["status"]
        if status == "awaiting_input":
            await api.put(f"/executions/{execution['id']}", json={"status": "running", "input": resume})
        if status in ("succeeded", "failed"):
            break
        await asyncio.sleep(0.05)
    await handle.result()
    history = await handle.fetch_history()
    name = "early_resume_before_patch"
    (FOLDER / f"{name}.json").write_text(json.dumps(json.loads(history.to_json()), indent=1) + "\n")
    print(f"recorded {name}: {status}, {len(history.events)} events")


async def _record_batched_fan_out(api: httpx.AsyncClient, env: WorkflowEnvironment, agent_id: str) -> None:
    """A map whose calls run in batches (workflows/call_batches.py): 12 api_calls to a local server, 4 at a
    time, between calls alone before and after it."""
    with LocalServer(lambda request: (200, {}, request.path.encode())) as server:
        task = {
            "name": "batched",
            "tools": [
                {"name": "echo", "type": "api_call", "api_call": {"url": server.url + "{{ arguments.n }}"}}
            ],
            "main": [
                {"tool": "echo", "arguments": {"n": "$ 'first'"}},
                {
                    "over": "$ list(range(12))",
                    "map": {"tool": "echo", "arguments": {"n": "$ _"}},
                    "parallelism": 4,
                },
                {"evaluate": {"paths": "$ [r['content'] for r in _]"}},
            ],
        }
        await _record(api, env, agent_id, "batched_fan_out", (task, {}, None))


async def _record_step_run(api: httpx.AsyncClient, env: WorkflowEnvironment, agent_id: str) -> None:
    """A run of steps in one activity (`durability: run`, workflows/step_runs.py): three api_calls with
    pure steps between them, then a step after the run."""
    with LocalServer(lambda request: (200, {}, request.path.encode())) as server:
        call = {"tool": "echo", "arguments": {"n": "$ _['n']"}}
        task = {
            "name": "a run",
            "defaults": {"durability": "run"},
            "tools": [
                {"name": "echo", "type": "api_call", "api_call": {"url": server.url + "{{ arguments.n }}"}}
            ],
            "main": [
                {"evaluate": {"n": "$ 1"}},
                call,
                {"evaluate": {"n": "$ int(_['content'][1:]) + 1"}, "label": "second"},
                call,
                {"set": {"seen": "$ _['content']"}},
                {"evaluate": {"n": "$ steps['second'].output['n'] + 1"}},
                call,
                {"evaluate": {"last": "$ _['content']", "seen": "$ state['seen']"}, "durability": "step"},
            ],
        }
        await _record(api, env, agent_id, "step_run", (task, {}, None))


# Scenarios that drive the execution themselves, on the plain stack.
DRIVEN_SCENARIOS = {
    "early_resume_before_patch": _record_early_resume,
    "batched_fan_out": _record_batched_fan_out,
    "step_run": _record_step_run,
}

MODEL_SCENARIOS = {
    "handoff": (_record_handoff, _handoff_model),
    "by_reference": (_record_by_reference, _by_reference_model),
}


async def main(names: list[str]) -> None:
    local = await LocalMint().start()
    wanted = names or [*SCENARIOS, *DRIVEN_SCENARIOS, *MODEL_SCENARIOS]
    try:
        # Payloads stay inline (no claim check) and plain (no encryption key), so a checked-in history replays
        # without the recorder's blobs or key.
        stack = await local.stack(claim_check_bytes=4 * 1024 * 1024, encryption_keys=())
        async with local.api(stack) as api:
            agent = (await api.post("/agents", json={"name": "recorder"})).json()
            for name in wanted:
                if name in SCENARIOS:
                    await _record(api, local.env, agent["id"], name)
                if name in DRIVEN_SCENARIOS:
                    await DRIVEN_SCENARIOS[name](api, local.env, agent["id"])
        for name in (n for n in wanted if n in MODEL_SCENARIOS):
            record, script = MODEL_SCENARIOS[name]
            with ModelServer(script) as model:
                stack = await local.stack(
                    claim_check_bytes=4 * 1024 * 1024,
                    encryption_keys=(),
                    task_queue=f"record-{name}",
                    openai_api_key="sk-recorder",
                    openai_base_url=model.openai_base_url,
                )
                async with local.api(stack) as api:
                    await record(api, local.env)
    finally:
        await local.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
