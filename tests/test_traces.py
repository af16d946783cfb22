"""Traces: `GET /executions/{id}/trace` item by item, a chat answer's trace id, and the
OTLP export a local collector receives, on the real stack with the scripted model."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.conftest import temporal_address
from tests.helpers import create_agent, create_task, run_task, start, wait_for_status
from tests.local_http import LocalServer, Request
from tests.model_server import Call, Reply
from tests.stack import BackgroundStack

MODEL = "gpt-4o-mini"
EXAMPLES = Path(__file__).parent.parent / "examples"


def _length(request: Request) -> tuple[int, dict[str, str], bytes]:
    return 200, {"Content-Type": "application/json"}, json.dumps(len(json.loads(request.body)["s"])).encode()


def _length_tool(url: str) -> dict[str, Any]:
    return {
        "name": "length",
        "type": "api_call",
        "description": "the length of a string",
        "api_call": {
            "method": "POST",
            "url": url,
            "json": {"s": "{{ arguments.s }}"},
            "params_schema": {"type": "object", "properties": {"s": {"type": "string"}}, "required": ["s"]},
        },
    }


def _ask_length_then_answer(call: Call) -> Reply:
    if not any(m["role"] == "tool" for m in call.messages):
        return Reply(tool_calls=[("length", {"s": "abcde"})])
    return Reply(content="It is 5 long.")


async def _trace(api: Any, execution_id: str) -> dict[str, Any]:
    response = await api.get(f"/executions/{execution_id}/trace")
    assert response.status_code == 200, response.text
    return response.json()


def _shape(item: dict[str, Any]) -> tuple[Any, ...]:
    """What a test compares of an item: its type and where it happened."""
    data = item["data"]
    return (item["type"], data.get("workflow"), data.get("step"))


async def test_a_prompt_with_a_tool_and_a_yield_trace_item_by_item(mapi, script):
    script.reply = _ask_length_then_answer
    with LocalServer(_length) as tool_server:
        task = {
            "name": "traced",
            "tools": [_length_tool(tool_server.url)],
            "main": [
                {
                    "prompt": "How long is 'abcde'?",
                    "tools": "all",
                    "auto_run_tools": True,
                    "unwrap": True,
                    "settings": {"model": MODEL},
                },
                {"workflow": "sub", "arguments": {"x": 1}},
                {"evaluate": {"done": "$ _.y"}},
            ],
            "sub": [{"evaluate": {"y": "$ _.x + 1"}}],
        }
        execution, _ = await run_task(mapi, task)
    assert execution["status"] == "succeeded", execution["error"]
    trace = await _trace(mapi, execution["id"])
    assert trace["trace_id"] == uuid.UUID(execution["id"]).hex
    items = trace["items"]
    assert [_shape(i) for i in items] == [
        ("run_start", "main", None),
        ("step_start", "main", 0),
        ("llm_call_start", None, None),
        ("llm_call_end", None, None),
        ("tool_call_start", None, None),
        ("tool_call_end", None, None),
        ("llm_call_start", None, None),
        ("llm_call_end", None, None),
        ("step_end", "main", 0),
        ("step_start", "main", 1),
        ("run_start", "sub", None),
        ("step_start", "sub", 0),
        ("step_end", "sub", 0),
        ("run_end", None, None),
        ("step_end", "main", 1),
        ("step_start", "main", 2),
        ("step_end", "main", 2),
        ("run_end", None, None),
    ]
    main_run, sub_run = items[0]["run_id"], items[10]["run_id"]
    assert main_run != sub_run
    assert [i["run_id"] for i in items[10:14]] == [sub_run] * 4  # the yielded workflow is a run of its own
    assert all(i["run_id"] == main_run for i in items[:10] + items[14:])
    assert items[10]["data"]["parent_run_id"] == main_run
    assert items[13]["data"]["outcome"] == "succeeded" and items[-1]["data"]["outcome"] == "succeeded"
    # Model calls: model, tokens and cost; the tool call: its name, arguments and outcome.
    for end in (items[3], items[7]):
        assert end["data"]["model"] == MODEL
        assert end["data"]["tokens"] == end["data"]["prompt_tokens"] + end["data"]["completion_tokens"] > 0
        assert end["data"]["cost"] > 0
    assert items[4]["data"]["name"] == "length" and json.loads(items[4]["data"]["arguments"]) == {
        "s": "abcde"
    }
    assert (
        items[5]["data"]["status"] == "success" and items[5]["data"]["call_id"] == items[4]["data"]["call_id"]
    )
    # Times: each call ends no earlier than it starts, and the items follow the clock.
    times = [datetime.fromisoformat(i["at"]) for i in items]
    assert times == sorted(times), times
    assert times[2] <= times[3] and times[4] <= times[5]


async def test_a_map_in_child_workflows_shows_each_child_as_a_run_of_the_same_trace(mapi):
    with LocalServer(lambda request: (200, {}, b"ok")) as server:
        task = {
            "name": "wide",
            "tools": [{"name": "ping", "type": "api_call", "api_call": {"url": server.url}}],
            # 251 items of one call each: a child workflow of 250 items, then one of 1 (workflows/fan_out.py).
            # Queued calls (local: false): a map of one api_call in the worker would batch, not split.
            "main": [
                {"over": "$ list(range(251))", "map": {"tool": "ping", "local": False}, "parallelism": 50}
            ],
        }
        execution, _ = await run_task(mapi, task)
    assert execution["status"] == "succeeded", execution["error"]
    trace = await _trace(mapi, execution["id"])
    items = trace["items"]
    main_run = items[0]["run_id"]
    assert _shape(items[0]) == ("run_start", "main", None)
    assert _shape(items[1]) == ("step_start", "main", 0) and items[1]["run_id"] == main_run
    assert _shape(items[-2]) == ("step_end", "main", 0) and items[-2]["run_id"] == main_run
    assert items[-1]["type"] == "run_end" and items[-1]["run_id"] == main_run
    children = [i for i in items[2:-2]]
    starts = [i for i in children if i["type"] == "run_start"]
    assert len(starts) == 2 and all(s["data"]["parent_run_id"] == main_run for s in starts)
    child_runs = [s["run_id"] for s in starts]
    assert len(set(child_runs)) == 2 and main_run not in child_runs
    # Each child: its run_start, a step_start and a step_end per item, its run_end; one after the other (in
    # the order they ended, which is when the parent adopts their transitions).
    position, sizes = 0, []
    for run in child_runs:
        end = next(
            i for i, item in enumerate(children) if item["type"] == "run_end" and item["run_id"] == run
        )
        block, position = children[position : end + 1], end + 1
        assert {i["run_id"] for i in block} == {run}
        assert block[0]["type"] == "run_start" and block[-1]["data"]["outcome"] == "succeeded"
        steps = block[1:-1]
        assert all(_shape(i)[1:] == ("main[0].map", 0) for i in steps)
        started = [i["data"]["item"] for i in steps if i["type"] == "step_start"]
        ended = [i["data"]["item"] for i in steps if i["type"] == "step_end"]
        assert sorted(started) == sorted(ended) and len(steps) == 2 * len(set(started))
        sizes.append(len(started))
    assert position == len(children) and sorted(sizes) == [1, 250]


async def test_a_failed_run_ends_its_runs_and_open_steps_with_the_error(mapi):
    task = {
        "name": "failing",
        # (not the last step: a yield that is hands the run over instead of nesting one)
        "main": [{"workflow": "sub", "arguments": {}}, {"evaluate": {"never": "$ 1"}}],
        "sub": [{"error": "the sub-workflow gave up"}],
    }
    execution, _ = await run_task(mapi, task)
    assert execution["status"] == "failed"
    items = (await _trace(mapi, execution["id"]))["items"]
    assert [_shape(i) for i in items] == [
        ("run_start", "main", None),
        ("step_start", "main", 0),
        ("run_start", "sub", None),
        ("run_end", None, None),
        ("step_end", "main", 0),
        ("run_end", None, None),
    ]  # (the failing step recorded no transition of its own: the error transition ends everything)
    assert items[4]["data"]["outcome"] == "failed"
    for end in (items[3], items[5]):
        assert end["data"]["outcome"] == "failed" and "gave up" in end["data"]["error"]
    assert items[3]["run_id"] == items[2]["run_id"] and items[5]["run_id"] == items[0]["run_id"]


async def test_a_trace_of_a_running_execution_has_what_happened_so_far(mapi):
    agent = await create_agent(mapi)
    task = await create_task(mapi, agent["id"], {"name": "waits", "main": [{"wait_for_input": {"info": {}}}]})
    execution = await start(mapi, task["id"])
    await wait_for_status(mapi, execution["id"], {"awaiting_input"})
    items = (await _trace(mapi, execution["id"]))["items"]
    assert [_shape(i) for i in items] == [("run_start", "main", None), ("step_start", "main", 0)]
    await mapi.put(f"/executions/{execution['id']}", json={"status": "cancelled"})
    await wait_for_status(mapi, execution["id"])


async def test_a_chat_answer_carries_its_trace_id(mapi):
    agent = await create_agent(mapi)
    session = (await mapi.post("/sessions", json={"agent": agent["id"]})).json()
    ids = []
    for _ in range(2):
        response = await mapi.post(
            f"/sessions/{session['id']}/chat", json={"messages": [{"role": "user", "content": "hi"}]}
        )
        assert response.status_code == 201, response.text
        answer = response.json()
        assert re.fullmatch(r"[0-9a-f]{32}", answer["trace_id"])
        assert answer["choices"][0]["message"]["content"]  # the Julep shape otherwise
        ids.append(answer["trace_id"])
    assert ids[0] != ids[1]


def _received_spans(collector: LocalServer) -> list[Any]:
    """Every span the collector was sent (OTLP/HTTP protobuf), decoded."""
    spans = []
    for request in list(collector.requests):
        if request.path != "/v1/traces":
            continue
        export = ExportTraceServiceRequest.FromString(request.body)
        for resource in export.resource_spans:
            for scope in resource.scope_spans:
                spans += scope.spans
    return spans


async def test_otlp_export_shows_an_execution_with_temporals_spans_as_one_trace(
    postgres_url, temporal_env, api_key
):
    with (
        LocalServer(lambda request: (200, {"Content-Type": "application/x-protobuf"}, b"")) as collector,
        LocalServer(lambda request: (200, {}, b"pong")) as tool_server,
    ):
        async with (
            BackgroundStack(
                postgres_url,
                temporal_address(temporal_env),
                task_queue=f"otlp-{uuid.uuid4()}",
                otlp_endpoint=collector.url,
            ) as stack,
            httpx.AsyncClient(base_url=stack.url, headers={"Authorization": f"Bearer {api_key}"}) as api,
        ):
            task = {
                "name": "exported",
                "tools": [{"name": "ping", "type": "api_call", "api_call": {"url": tool_server.url}}],
                "main": [{"tool": "ping"}, {"workflow": "sub", "arguments": {}}, {"evaluate": {"ok": "$ 1"}}],
                "sub": [{"evaluate": {"done": "$ True"}}],
            }
            execution, _ = await run_task(api, task)
            assert execution["status"] == "succeeded", execution["error"]
            trace_id = uuid.UUID(execution["id"]).bytes
            deadline = asyncio.get_running_loop().time() + 30
            while True:  # spans leave in batches, about once a second
                spans = [s for s in _received_spans(collector) if s.trace_id == trace_id]
                names = {s.name for s in spans}
                ids = {s.span_id for s in spans}
                # (a span may come a batch before its parent: wait until every parent has come too)
                whole = all(not s.parent_span_id or s.parent_span_id in ids for s in spans)
                if {"RunWorkflow:TaskExecutionWorkflow", "run sub"} <= names and whole:
                    break
                assert asyncio.get_running_loop().time() < deadline, sorted(names)
                await asyncio.sleep(0.2)
    by_id = {s.span_id: s for s in spans}
    (root,) = [s for s in spans if not s.parent_span_id]
    assert root.name == f"execution {execution['id']}"
    # One trace: every span hangs, through its parents, from the execution's root span.
    for span in spans:
        seen = span
        while seen.parent_span_id:
            assert seen.parent_span_id in by_id, (span.name, sorted(names))
            seen = by_id[seen.parent_span_id]
        assert seen is root
    assert {
        "StartWorkflow:TaskExecutionWorkflow",
        "RunWorkflow:TaskExecutionWorkflow",
        "run main",
        "step main[0]",
        "step main[1]",
        "run sub",
        "step sub[0]",
    } <= names
    start = next(s for s in spans if s.name == "StartWorkflow:TaskExecutionWorkflow")
    assert start.parent_span_id == root.span_id  # Temporal's spans sit under the execution's root span
    sub = next(s for s in spans if s.name == "run sub")
    assert by_id[sub.parent_span_id].name == "step main[1]"  # the yielded run inside the step that ran it


async def test_the_traced_example_shows_its_sub_workflow_inside_its_step(api):
    task = (EXAMPLES / "traced.yaml").read_text()
    execution, _ = await run_task(api, task, {"words": ["durable", "fast", "safe"]})
    assert execution["status"] == "succeeded", execution["error"]
    assert execution["output"] == {"total": 15}
    items = (await _trace(api, execution["id"]))["items"]
    kinds = [_shape(i) for i in items]
    assert kinds[:2] == [("run_start", "main", None), ("step_start", "main", 0)]
    assert kinds.count(("step_start", "main[0].map", 0)) == 3  # one per word
    held = kinds.index(("run_start", "total", None))
    assert kinds[held - 1] == ("step_start", "main", 1)
    assert kinds[-4:] == [
        ("step_end", "main", 1),
        ("step_start", "main", 2),
        ("step_end", "main", 2),
        ("run_end", None, None),
    ]
