"""foreach, map_reduce and parallel: order, chaining, reduce, the sliding window, and large fan-outs that run in
child workflows. The unit-level mirror of tests/test_steps.py, tests/test_reduce.py and tests/test_fan_out.py."""

from __future__ import annotations

import asyncio

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.exceptions import ApplicationError

from activities import call_batches
from contracts.temporal import CALL_API
from tests.unit.fakes import http_response
from tests.unit.harness import task

PING = {"name": "ping", "type": "api_call", "api_call": {"url": "https://example.com/{{ arguments.n }}"}}


async def children(mint, execution_id: str) -> int:
    """How many child workflows (fan-out chunks) the execution ran."""
    history = await mint.env.client.get_workflow_handle(execution_id).fetch_history()
    return sum(
        e.event_type == EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED for e in history.events
    )


# foreach -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(
            task({"foreach": {"in": 'inputs[0]["xs"]', "do": {"evaluate": {"v": "_ * 10"}}}}), id="seed"
        ),
        pytest.param(task({"foreach": {"in": "$ _.xs", "do": {"evaluate": {"v": "$ _ * 10"}}}}), id="dollar"),
    ],
)
async def test_foreach_outputs_the_results_in_order_each_item_numbered(mint, spec):
    done = await mint.succeed(spec, {"xs": [3, 1, 2]})
    assert done.output == [{"v": 30}, {"v": 10}, {"v": 20}]
    inner = done.at("main[0].foreach")
    assert [t["metadata"] for t in inner] == [{"item": 0}, {"item": 1}, {"item": 2}]
    assert [t["output"] for t in inner] == done.output


async def test_foreach_runs_one_item_after_another(mint):
    # Each item appends to state and reads what the items before it left.
    spec = task(
        {"set": {"seen": "$ []"}},
        {"foreach": {"in": "$ [1, 2, 3]", "do": [{"set": {"seen": "$ state.seen + [_]"}}]}},
        {"get": "seen"},
    )
    done = await mint.succeed(spec)
    assert done.output == [1, 2, 3]


async def test_foreach_chains_several_steps_per_item(mint):
    spec = task(
        {
            "foreach": {
                "in": "$ ['a', 'b']",
                "do": [{"evaluate": {"s": "$ _ + '1'"}}, {"evaluate": {"s": "$ _.s + '2'"}}],
            }
        }
    )
    done = await mint.succeed(spec)
    assert done.output == [{"s": "a12"}, {"s": "b12"}]


async def test_foreach_over_something_not_a_list_fails_saying_what_it_got(mint):
    done = await mint.fail(task({"foreach": {"in": "$ 5", "do": {"evaluate": {"v": "$ _"}}}}))
    assert "main[0].foreach.in: expected a list to iterate over, got int" in done.error


async def test_a_fan_out_over_the_limit_fails_naming_the_limit(mint):
    spec = task({"foreach": {"in": "$ list(range(11))", "do": {"evaluate": {"v": "$ _"}}}})
    done = await mint.fail(spec, max_fan_out=10)
    assert "11 items is over the fan-out limit of 10 items (MINT_MAX_FAN_OUT)" in done.error


async def test_a_large_pure_foreach_runs_in_the_execution_and_writes_in_batches(mint):
    spec = task({"foreach": {"in": "$ list(range(1200))", "do": {"evaluate": {"sq": "$ _ * _"}}}})
    done = await mint.succeed(spec)
    assert done.output == [{"sq": i * i} for i in range(1200)]
    assert len(done.transitions) == 1 + 1200 + 1 + 1  # init, the items, the foreach, finish
    assert done.row.batches >= 3  # at most 500 transitions a batch
    assert await children(mint, done.id) == 0


async def test_a_large_foreach_that_blocks_runs_in_child_workflows_in_order_carrying_state(mint):
    # A sleep counts as a call (it adds history events), so 300 items run as chunks of 250; `sleep: 0`
    # starts no timer, which keeps the test fast.
    spec = task(
        {"set": {"seen": "$ []"}},
        {
            "foreach": {
                "in": "$ list(range(300))",
                "do": [{"set": {"seen": "$ state.seen + [_]"}}, {"sleep": 0}],
            }
        },
        {"get": "seen"},
    )
    done = await mint.succeed(spec)
    assert done.output == list(range(300))  # each chunk saw the state the one before left
    assert await children(mint, done.id) == 2
    seqs = [t["seq"] for t in done.transitions]
    assert seqs == list(range(1, len(seqs) + 1))  # the children's transitions, renumbered in the execution's
    assert [t["metadata"]["item"] for t in done.at("main[1].foreach") if t["current"]["step"] == 0] == list(
        range(300)
    )


RETURN_IN_A_CHUNK = task(
    {
        "foreach": {
            "in": "$ list(range(300))",
            "do": [{"sleep": 0}, {"if": "$ _ == 3", "then": {"return": {"at": "$ _"}}}],
        }
    },
    {"evaluate": {"unreached": "$ True"}},
)


async def test_a_return_inside_a_chunk_ends_the_workflow_with_its_value(mint):
    done = await mint.succeed(RETURN_IN_A_CHUNK)
    assert done.output == {"at": 3}
    assert [t["current"]["step"] for t in done.at("main")] == [0]  # main[1] never ran


async def test_no_item_after_a_return_runs_in_a_chunked_foreach(mint):
    done = await mint.succeed(RETURN_IN_A_CHUNK)
    assert {t["metadata"]["item"] for t in done.at("main[0].foreach")} == {0, 1, 2, 3}


# map_reduce ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(task({"over": '_["xs"]', "map": {"evaluate": {"sq": "_ * _"}}}), id="seed"),
        pytest.param(task({"over": "$ _.xs", "map": {"evaluate": {"sq": "$ _ * _"}}}), id="dollar"),
    ],
)
async def test_map_without_reduce_outputs_the_results_in_item_order(mint, spec):
    xs = [5, 1, 4, 2, 3]
    done = await mint.succeed(spec, {"xs": xs})
    assert done.output == [{"sq": x * x} for x in xs]
    inner = sorted(done.at("main[0].map"), key=lambda t: t["metadata"]["item"])
    assert [t["output"] for t in inner] == done.output


async def test_reduce_folds_the_results_from_initial(mint):
    spec = task(
        {"over": "$ _.xs", "map": {"evaluate": {"sq": "$ _ * _"}}, "reduce": "$ results + _.sq", "initial": 0}
    )
    done = await mint.succeed(spec, {"xs": [1, 2, 3, 4]})
    assert done.output == 30


async def test_a_seed_reduce_starts_from_an_empty_list(mint):
    spec = task(
        {"over": '_["xs"]', "map": {"evaluate": {"sq": "_ * _"}}, "reduce": 'results + [_["sq"] + 1]'}
    )
    done = await mint.succeed(spec, {"xs": [1, 2, 3]})
    assert done.output == [2, 5, 10]


async def test_an_omitted_reduce_appends_the_results_after_initials_items(mint):
    spec = task({"over": "$ [1, 2]", "map": {"evaluate": {"v": "$ _"}}, "initial": ["start"]})
    done = await mint.succeed(spec)
    assert done.output == ["start", {"v": 1}, {"v": 2}]


async def test_julep_default_reduce_appends_the_results_in_order(mint):
    spec = task(
        {"over": "$ list(range(2000))", "map": {"evaluate": {"sq": "$ _ * _"}}, "reduce": "$ results + [_]"},
        {"evaluate": {"count": "$ len(_)", "last": "$ _[-1]"}},
    )
    done = await mint.succeed(spec)
    assert done.output == {"count": 2000, "last": {"sq": 1999 * 1999}}


async def test_a_reduce_that_fails_fails_the_step_naming_the_reduce(mint):
    spec = task({"over": "$ [1, 0]", "map": {"evaluate": {"x": "$ _"}}, "reduce": "$ results + [1 // _.x]"})
    done = await mint.fail(spec)
    assert "ZeroDivisionError" in done.error and "results + [1 // _.x]" in done.error


WAITING_MAP = task({"over": "$ _.xs", "parallelism": 2, "map": {"wait_for_input": {"info": {"item": "$ _"}}}})


def waiting_items(outcome) -> list[str]:
    return [t["output"]["info"]["item"] for t in outcome.of_type("wait")]


async def test_map_parallelism_bounds_the_items_in_flight(mint):
    execution_id = await mint.start(WAITING_MAP, {"xs": ["a", "b", "c"]})
    await mint.until(execution_id, "wait", 2)
    await asyncio.sleep(0.3)  # every chance for a third item to start if the window did not hold
    assert sorted(waiting_items(mint.outcome(execution_id))) == ["a", "b"]
    assert mint.outcome(execution_id).status == "awaiting_input"


async def test_the_map_window_slides_as_items_finish_and_results_keep_item_order(mint):
    execution_id = await mint.start(WAITING_MAP, {"xs": ["a", "b", "c"]})
    await mint.until(execution_id, "wait", 2)
    await mint.resume(execution_id, "r1")  # the oldest open wait: item a
    assert waiting_items(await mint.until(execution_id, "wait", 3))[-1] == "c"
    await mint.resume(execution_id, "r2")
    await mint.resume(execution_id, "r3")
    done = await mint.finish(execution_id)
    assert done.status == "succeeded"
    assert done.output == ["r1", "r2", "r3"]


async def test_a_resumed_items_transitions_are_written_while_another_item_still_waits(mint):
    """The log is written before the workflow blocks, even when it blocks on another item's wait."""
    execution_id = await mint.start(WAITING_MAP, {"xs": ["a", "b"]})
    await mint.until(execution_id, "wait", 2)
    await mint.resume(execution_id, "r1")
    try:
        await mint.until(execution_id, "resume", 1, timeout=0.5)
    finally:
        await mint.resume(execution_id, "r2")
        await mint.finish(execution_id)


async def test_a_large_map_of_calls_runs_in_child_workflows_and_keeps_order(mint):
    spec = task(
        {
            "over": "$ list(range(260))",
            "map": {"tool": "ping", "arguments": {"n": "$ _"}, "local": False},  # not batched: queued calls
            "parallelism": 100,
            "reduce": "$ results + [int(_.json.url.rsplit('/', 1)[1])]",
        },
        tools=[PING],
    )
    mint.fakes.api = lambda request: http_response(200, {"url": request["url"]})
    done = await mint.succeed(spec)
    assert done.output == list(range(260))
    assert await children(mint, done.id) == 2  # 250 items, then 10
    assert len(done.transitions) == 1 + 260 + 1 + 1
    assert sorted(t["metadata"]["item"] for t in done.at("main[0].map")) == list(range(260))
    assert len({r["headers"]["Idempotency-Key"] for r in mint.fakes.requests(CALL_API)}) == 260


async def test_a_large_map_of_one_call_runs_its_calls_in_batches_and_keeps_order(mint):
    spec = task(
        {
            "over": "$ list(range(260))",
            "map": {"tool": "ping", "arguments": {"n": "$ _"}},
            "parallelism": 20,
            "reduce": "$ results + [int(_.json.url.rsplit('/', 1)[1])]",
        },
        tools=[PING],
    )
    mint.fakes.api = lambda request: http_response(200, {"url": request["url"]})
    done = await mint.succeed(spec)
    assert done.output == list(range(260))
    assert await children(mint, done.id) == 0
    assert len(done.transitions) == 1 + 260 + 1 + 1
    assert sorted(t["metadata"]["item"] for t in done.at("main[0].map")) == list(range(260))
    assert {t["metadata"]["attempts"] for t in done.at("main[0].map")} == {1}
    assert len({r["headers"]["Idempotency-Key"] for r in mint.fakes.requests(CALL_API)}) == 260
    history = await mint.env.client.get_workflow_handle(done.id).fetch_history()
    markers = sum(e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED for e in history.events)
    assert markers < 20  # 2 lanes of 10, batches of 50: 6 batches, and the transition writes


async def test_a_batch_that_stops_for_its_answers_size_leaves_its_other_calls_to_the_next(mint, monkeypatch):
    # Small, as this layer has no claim check to carry megabytes (Mint's data converter always has one).
    monkeypatch.setattr(call_batches, "MAX_BATCH_ANSWER_BYTES", 5000)
    big = "x" * 1000  # each answer counts twice: a batch holds 3
    spec = task(
        {
            "over": "$ list(range(7))",
            "map": {"tool": "ping", "arguments": {"n": "$ _"}},
            "parallelism": 1,
            "reduce": "$ results + [len(_.content)]",
        },
        tools=[PING],
    )
    mint.fakes.api = lambda request: http_response(200, big)
    done = await mint.succeed(spec)
    assert done.output == [len(big)] * 7
    assert len(mint.fakes.requests(CALL_API)) == 7  # each call made once
    assert mint.fakes.batches == [7, 4, 1]  # 3 made of 7, then 3 of the 4 left, then the last


async def test_a_batched_call_that_fails_fails_the_map_as_the_same_call_alone_does(mint):
    def down(request):
        if request["url"].endswith("/3"):
            raise ApplicationError(f"{request['url']} answered 503", type="HttpUnavailable")
        return http_response(200, {})

    mint.fakes.api = down
    retry = {"max_attempts": 2, "initial_interval": 0.001}
    batched = task(
        {"over": "$ list(range(8))", "map": {"tool": "ping", "arguments": {"n": "$ _"}, "retry": retry}},
        tools=[PING],
    )
    alone = task(
        {
            "over": "$ list(range(8))",
            "map": [{"tool": "ping", "arguments": {"n": "$ _"}, "retry": retry}, {"evaluate": {"x": "$ 1"}}],
        },
        tools=[PING],
    )
    failed_batched, failed_alone = await mint.fail(batched), await mint.fail(alone)
    assert failed_batched.error == failed_alone.error
    assert failed_batched.error.startswith("HttpUnavailable: ") and "/3 answered 503" in failed_batched.error


async def test_a_failing_item_in_a_child_fails_the_execution_with_its_reason(mint):
    # One lane: the children run one after another, so none is still running when the execution fails
    # (Temporal's test server can stop skipping time after a parent fails beside a running child).
    spec = task(
        {
            "over": "$ list(range(300))",
            "map": [{"sleep": 0}, {"if": "$ _ == 277", "then": {"error": "item {{ _ }}"}}],
            "parallelism": 1,
        }
    )
    done = await mint.fail(spec)
    assert done.error == "TaskError: item 277"


async def test_a_failing_call_fails_the_execution_naming_the_activity_and_its_error(mint):
    def api(request):
        raise ApplicationError("https://example.com/7 answered 500", type="HttpUnavailable")

    mint.fakes.api = api
    spec = task(
        {"tool": "ping", "arguments": {"n": 7}, "retry": {"max_attempts": 2, "initial_interval": 1}},
        tools=[PING],
    )
    done = await mint.fail(spec)
    assert done.error == "HttpUnavailable: https://example.com/7 answered 500"
    assert len(mint.fakes.requests(CALL_API)) == 2  # retried by the step's policy
    assert done.types == ["init", "error"]


async def test_a_fan_out_that_waits_for_input_cannot_be_split_and_is_refused(mint):
    spec = task({"over": "$ list(range(1000))", "map": {"wait_for_input": {"info": {"q": "$ _"}}}})
    done = await mint.fail(spec)
    assert "1000 items" in done.error and "wait for input" in done.error and "split" in done.error
    assert "wait" not in done.types


# parallel ------------------------------------------------------------------------------------------------------


async def test_parallel_runs_every_branch_on_the_same_input_and_outputs_their_results(mint):
    spec = task(
        {
            "parallel": [
                {"evaluate": {"a": "$ _.n + 1"}},
                [{"evaluate": {"b": "$ _.n * 2"}}, {"evaluate": {"b": "$ _.b + 1"}}],
            ]
        }
    )
    done = await mint.succeed(spec, {"n": 10})
    assert done.output == [{"a": 11}, {"b": 21}]
    assert done.outputs("main[0].parallel[0]") == [{"a": 11}]
    assert done.outputs("main[0].parallel[1]") == [{"b": 20}, {"b": 21}]


async def test_a_failing_branch_fails_the_parallel_step_and_the_execution(mint):
    spec = task({"parallel": [{"evaluate": {"a": "$ 1"}}, {"error": "branch two broke"}]})
    done = await mint.fail(spec)
    assert done.error == "TaskError: branch two broke"
