"""Big fan-outs: map_reduce over 10,000 items keeps order; fan-outs too big for one history are refused clearly."""

from tests.helpers import run_task


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


async def test_a_fan_out_of_calls_too_big_for_one_history_is_refused_clearly(api):
    task = {
        "name": "too wide",
        "tools": [{"name": "ping", "type": "api_call", "api_call": {"url": "http://127.0.0.1:9/"}}],
        "main": [{"over": "$ list(range(20000))", "map": {"tool": "ping", "arguments": {}}}],
    }
    execution, rows = await run_task(api, task)
    assert execution["status"] == "failed"
    assert "20000 items" in execution["error"] and "split" in execution["error"]
