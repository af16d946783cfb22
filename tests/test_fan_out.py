"""Big fan-outs: map_reduce over 10,000 items keeps order; large fan-outs of calls run in child workflows;
fan-outs that cannot be split are refused clearly."""

from tests.helpers import run_task
from tests.local_http import LocalServer


async def test_map_reduce_over_10000_items_keeps_order(api):
    task = {
        "name": "wide",
        "main": [
            {"over": "$ list(range(10000))", "map": {"evaluate": {"square": "$ _ * _"}}, "parallelism": 50},
            {
                "evaluate": {
                    "count": "$ len(_)",
                    "first": "$ _[0]",
                    "last": "$ _[-1]",
                    "ordered": "$ all(_[i]['square'] == i * i for i in range(len(_)))",
                }
            },
        ],
    }
    execution, _ = await run_task(api, task)
    assert execution["status"] == "succeeded", execution
    assert execution["output"] == {
        "count": 10000,
        "first": {"square": 0},
        "last": {"square": 99980001},
        "ordered": True,
    }
    assert execution["transition_count"] == 10000 + 4


async def _chunk_children(temporal_env, execution_id: str) -> int:
    """How many fan-out chunks ran as child workflows of this execution."""
    history = await temporal_env.client.get_workflow_handle(execution_id).fetch_history()
    return sum(
        event.HasField("child_workflow_execution_completed_event_attributes") for event in history.events
    )


async def test_a_large_map_of_calls_runs_in_child_workflows_and_keeps_order(api, temporal_env):
    with LocalServer(lambda request: (200, {}, request.path.encode())) as server:
        task = {
            "name": "wide calls",
            "tools": [
                {"name": "echo", "type": "api_call", "api_call": {"url": server.url + "{{ arguments.n }}"}}
            ],
            "main": [
                {
                    "over": "$ list(range(1000))",
                    # Queued activities, not the worker's: not batched (tests/test_call_batches.py).
                    "map": {"tool": "echo", "arguments": {"n": "$ _"}, "local": False},
                    "parallelism": 50,
                    "reduce": "$ results + [int(_['content'].lstrip('/'))]",
                }
            ],
        }
        execution, rows = await run_task(api, task)
        assert execution["status"] == "succeeded", execution["error"]
        assert execution["output"] == list(range(1000))
        # Calls run at least once; a retried one (a slow machine) repeats its Idempotency-Key.
        assert len({r.headers["Idempotency-Key"] for r in server.requests}) == 1000
        assert {r.path for r in server.requests} == {f"/{i}" for i in range(1000)}
    assert await _chunk_children(temporal_env, execution["id"]) == 4  # 1,000 items in chunks of 250
    steps = [r for r in rows if r["type"] == "step" and "item" in r["metadata"]]
    assert execution["transition_count"] == 1 + 1000 + 2  # init, the items, the map step, finish
    # The first page (1,000 rows) holds init and 999 distinct items, adopted from the children.
    assert len({r["metadata"]["item"] for r in steps}) == len(steps) == 999


async def test_a_large_foreach_runs_its_chunks_in_order_and_carries_state(api, temporal_env):
    with LocalServer() as server:
        task = {
            "name": "long foreach",
            "tools": [{"name": "ping", "type": "api_call", "api_call": {"url": server.url}}],
            "main": [
                {"set": {"seen": "$ []"}},
                {
                    "foreach": {
                        "in": "$ list(range(600))",
                        "do": [{"set": {"seen": "$ state.seen + [_]"}}, {"tool": "ping", "arguments": {}}],
                    }
                },
                {"get": "seen"},
            ],
        }
        execution, _ = await run_task(api, task)
    assert execution["status"] == "succeeded", execution["error"]
    assert execution["output"] == list(range(600))  # each chunk saw the state the one before left
    assert await _chunk_children(temporal_env, execution["id"]) == 3


async def test_a_failing_item_in_a_child_fails_the_execution_with_its_reason(api):
    with LocalServer(lambda r: (500 if r.path == "/777" else 200, {}, b"{}")) as server:
        task = {
            "name": "one bad item",
            "tools": [
                {"name": "echo", "type": "api_call", "api_call": {"url": server.url + "{{ arguments.n }}"}}
            ],
            "main": [
                {
                    "over": "$ list(range(1000))",
                    "map": {"tool": "echo", "arguments": {"n": "$ _"}, "retry": {"max_attempts": 1}},
                }
            ],
        }
        execution, rows = await run_task(api, task)
    assert execution["status"] == "failed"
    assert execution["error"].startswith("HttpUnavailable: ") and "500" in execution["error"]
    assert rows[-1]["type"] == "error"


async def test_a_return_inside_a_chunk_ends_the_workflow_with_its_value(api):
    with LocalServer() as server:
        task = {
            "name": "early return",
            "tools": [{"name": "ping", "type": "api_call", "api_call": {"url": server.url}}],
            "main": [
                {
                    "foreach": {
                        "in": "$ list(range(400))",
                        "do": [
                            {"tool": "ping", "arguments": {}},
                            {"if": "$ _['status_code'] == 200", "then": {"return": {"at": "$ 'first'"}}},
                        ],
                    }
                },
                {"evaluate": {"unreached": "$ True"}},
            ],
        }
        execution, _ = await run_task(api, task)
        # foreach is sequential: the first item returned (a retried call repeats its key)
        assert len({r.headers["Idempotency-Key"] for r in server.requests}) == 1
    assert execution["status"] == "succeeded", execution["error"]
    assert execution["output"] == {"at": "first"}


async def test_a_fan_out_too_big_to_split_is_refused_clearly(api):
    task = {
        "name": "too wide",
        "main": [{"over": "$ list(range(1000))", "map": {"wait_for_input": {"info": {"q": "$ _"}}}}],
    }
    execution, rows = await run_task(api, task)
    assert execution["status"] == "failed"
    assert "1000 items" in execution["error"] and "wait for input" in execution["error"]
    assert "split" in execution["error"]
