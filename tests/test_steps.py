"""Every step type on the real stack (API, worker, Postgres, Temporal), checked through the transitions it writes.

Where the two dialects differ (seed: bare Python expressions; `$`: `$ expr`, literals, templates) a test runs
once per dialect. Transitions are read back through the API, as a client would see them.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from tests.helpers import create_agent, create_task, load, run_task, start, transitions, wait_for_status
from tests.local_http import LocalServer

# Helpers -----------------------------------------------------------------------------------------------------


def kinds(rows: list[dict[str, Any]]) -> list[str]:
    return [r["type"] for r in rows]


def where(row: dict[str, Any]) -> tuple[str, int]:
    return row["current"]["workflow"], row["current"]["step"]


def step_outputs(rows: list[dict[str, Any]], workflow: str) -> list[Any]:
    """Outputs of the `step` transitions written for one (possibly nested) workflow path, in order."""
    return [r["output"] for r in rows if r["type"] == "step" and r["current"]["workflow"] == workflow]


def step_at(rows: list[dict[str, Any]], workflow: str, step: int) -> dict[str, Any]:
    found = [r for r in rows if r["type"] == "step" and where(r) == (workflow, step)]
    assert len(found) == 1, f"expected one step transition at {workflow}[{step}], got {found}"
    return found[0]


def task(*main: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"name": "steps", "main": list(main), **extra}


async def succeed(
    api: httpx.AsyncClient, spec: dict[str, Any] | str, input_: Any = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run a task to the end and require `succeeded`, a leading `init` and a trailing `finish`."""
    execution, rows = await run_task(api, spec, input_)
    assert execution["status"] == "succeeded", execution
    assert rows[0]["type"] == "init" and rows[-1]["type"] == "finish", kinds(rows)
    assert rows[-1]["output"] == execution["output"]
    return execution, rows


async def fail(
    api: httpx.AsyncClient, spec: dict[str, Any] | str, input_: Any = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run a task to the end and require `failed` with a final `error` transition carrying the message."""
    execution, rows = await run_task(api, spec, input_)
    assert execution["status"] == "failed", execution
    assert rows[-1]["type"] == "error", kinds(rows)
    assert execution["error"] and rows[-1]["output"]["error"] == execution["error"]
    return execution, rows


async def launch(api: httpx.AsyncClient, spec: dict[str, Any] | str, input_: Any = None) -> str:
    """Create and start a task without waiting for it to end; returns the execution id."""
    agent = await create_agent(api)
    created = await create_task(api, agent["id"], spec)
    return (await start(api, created["id"], input_))["id"]


async def rows_until(
    api: httpx.AsyncClient, execution_id: str, kind: str, count: int = 1, timeout: float = 30
) -> list[dict[str, Any]]:
    """Poll the transitions until `count` of type `kind` are written."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        rows = await transitions(api, execution_id)
        if kinds(rows).count(kind) >= count:
            return rows
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"never saw {count} {kind!r} transitions: {kinds(rows)}")
        await asyncio.sleep(0.05)


async def resume(api: httpx.AsyncClient, execution_id: str, value: Any) -> dict[str, Any]:
    response = await api.put(f"/executions/{execution_id}", json={"status": "running", "input": value})
    assert response.status_code == 200, response.text
    return response.json()


async def cancel(api: httpx.AsyncClient, execution_id: str) -> dict[str, Any]:
    response = await api.put(f"/executions/{execution_id}", json={"status": "cancelled", "reason": "test"})
    assert response.status_code == 200, response.text
    return await wait_for_status(api, execution_id)


async def timers(env: WorkflowEnvironment, execution_id: str) -> list[float]:
    """Durations (seconds) of the Temporal timers the execution's workflow started."""
    history = await env.client.get_workflow_handle(execution_id).fetch_history()
    return [
        e.timer_started_event_attributes.start_to_fire_timeout.ToTimedelta().total_seconds()
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_TIMER_STARTED
    ]


async def started_timers(env: WorkflowEnvironment, execution_id: str, timeout: float = 30) -> list[float]:
    """Poll the workflow history until it has started at least one timer."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not (found := await timers(env, execution_id)):
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("the workflow never started a timer")
        await asyncio.sleep(0.05)
    return found


async def end_workflow(env: WorkflowEnvironment, execution_id: str) -> None:
    """Terminate a workflow a failed test left behind (a failing workflow task retries forever)."""
    try:
        await env.client.get_workflow_handle(execution_id).terminate("test cleanup")
    except RPCError:
        pass  # it already ended


# evaluate, inputs/outputs/_ ------------------------------------------------------------------------------------


async def test_evaluate_seed_bare_expressions(api):
    spec = task({"evaluate": {"x": '_["a"] + 1', "word": '"hello"', "both": 'str(_["a"]) + "!"'}})
    execution, rows = await succeed(api, spec, {"a": 41})
    assert execution["output"] == {"x": 42, "word": "hello", "both": "41!"}
    assert rows[0]["output"] == {"a": 41}
    row = step_at(rows, "main", 0)
    assert row["output"] == {"x": 42, "word": "hello", "both": "41!"}
    assert row["next"] is None


async def test_evaluate_dollar_expressions_literals_and_templates(api):
    spec = task(
        {
            "evaluate": {
                "x": "$ _.a + 1",
                "literal": "1 + 1",
                "greeting": "hi {{ _.a }}",
                "fstring": '$ f"n={_.a}"',
            }
        }
    )
    execution, _ = await succeed(api, spec, {"a": 41})
    assert execution["output"] == {"x": 42, "literal": "1 + 1", "greeting": "hi 41", "fstring": "n=41"}


async def test_an_integer_too_long_for_json_fails_the_step_saying_so(api):
    execution, _ = await run_task(api, {"name": "big", "main": [{"evaluate": {"n": "$ 10 ** 5000"}}]})
    assert execution["status"] == "failed" and "integer too long" in execution["error"]


async def test_seed_dialect_reads_an_unquoted_word_as_text_and_says_so_when_the_task_is_created(api):
    agent = await create_agent(api)
    response = await api.post(
        f"/agents/{agent['id']}/tasks", json=task({"evaluate": {"x": "hello"}}), params={"warnings": "true"}
    )
    assert response.status_code == 201, response.text
    warning = {"path": "main[0].evaluate.x", "message": "read as text, not Python (unknown name 'hello')"}
    assert response.json()["warnings"] == [warning]
    execution, _ = await succeed(api, task({"evaluate": {"x": "hello"}}))
    assert execution["output"] == {"x": "hello"}


async def test_seed_inputs_outputs_and_underscore(api):
    spec = task(
        {"evaluate": {"a": 'inputs[0]["n"] * 2'}},
        {"evaluate": {"b": '_["a"] + 1', "input_is_previous_output": "inputs[1] == outputs[0]"}},
        {"evaluate": {"c": 'outputs[0]["a"] + outputs[1]["b"] + inputs[0]["n"]', "seen": "len(outputs)"}},
    )
    execution, rows = await succeed(api, spec, {"n": 5})
    assert step_outputs(rows, "main") == [
        {"a": 10},
        {"b": 11, "input_is_previous_output": True},
        {"c": 26, "seen": 2},
    ]


async def test_dollar_steps_by_index_and_label(api):
    spec = task(
        {"label": "first", "evaluate": {"a": "$ _.n * 2"}},
        {"evaluate": {"b": "$ steps[0].output.a + 1", "in0": "$ steps[0].input.n"}},
        {"evaluate": {"c": "$ steps['first'].output.a + _.b", "first_in": "$ steps['first'].input"}},
    )
    execution, rows = await succeed(api, spec, {"n": 5})
    assert execution["output"] == {"c": 21, "first_in": {"n": 5}}
    assert step_outputs(rows, "main")[1] == {"b": 11, "in0": 5}
    assert step_at(rows, "main", 0)["step_label"] == "first"
    assert step_at(rows, "main", 1)["step_label"] is None


async def test_step_transitions_point_to_the_next_step_in_the_same_scope(api):
    spec = task({"evaluate": {"x": "1"}}, {"evaluate": {"x": "2"}}, {"evaluate": {"x": "3"}})
    _, rows = await succeed(api, spec)
    assert kinds(rows) == ["init", "step", "step", "step", "finish"]
    scope = rows[0]["current"]["scope_id"]
    assert all(r["current"]["scope_id"] == scope for r in rows)
    steps = [r for r in rows if r["type"] == "step"]
    assert [where(r) for r in steps] == [("main", 0), ("main", 1), ("main", 2)]
    assert [r["next"] for r in steps] == [
        {"workflow": "main", "step": 1, "scope_id": scope},
        {"workflow": "main", "step": 2, "scope_id": scope},
        None,
    ]


# set / get / state, log, return, error ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(
            task(
                {"set": {"count": '_["n"] * 2'}},
                {"evaluate": {"x": '"ignored"'}},
                {"get": "count"},
                {"evaluate": {"plus": '_ + state["count"]'}},
            ),
            id="seed",
        ),
        pytest.param(
            task(
                {"set": {"count": "$ _.n * 2"}},
                {"evaluate": {"x": "ignored"}},
                {"get": "count"},
                {"evaluate": {"plus": "$ _ + state.count"}},
            ),
            id="dollar",
        ),
    ],
)
async def test_set_then_get_reads_state(api, spec):
    execution, rows = await succeed(api, spec, {"n": 5})
    assert step_outputs(rows, "main") == [{"count": 10}, {"x": "ignored"}, 10, {"plus": 20}]


async def test_get_of_an_unset_key_is_null(api):
    execution, _ = await succeed(api, task({"get": "missing"}))
    assert execution["output"] is None


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(task({"log": 'Hello {{inputs[0]["name"]}} ({{ _["n"] + 1 }})'}), id="seed"),
        pytest.param(
            task(
                {"evaluate": {"name": "$ _.name", "n": "$ _.n"}}, {"log": "Hello {{_.name}} ({{ _.n + 1 }})"}
            ),
            id="dollar",
        ),
    ],
)
async def test_log_passes_its_input_through_and_records_its_text(api, spec):
    # Julep's log: the output is the input; the rendered text goes to the metadata.
    execution, rows = await succeed(api, spec, {"name": "Ada", "n": 1})
    assert execution["output"] == {"name": "Ada", "n": 1}
    logged = step_at(rows, "main", len(spec["main"]) - 1)
    assert logged["output"] == {"name": "Ada", "n": 1}
    assert logged["metadata"]["log"] == "Hello Ada (2)"


async def test_log_of_an_expression_records_its_value_and_keeps_the_item_metadata(api):
    spec = task({"over": "$ _.xs", "map": {"log": "$ _ * _"}})
    execution, rows = await succeed(api, spec, {"xs": [2, 3]})
    assert execution["output"] == [2, 3]
    inner = sorted((r for r in rows if where(r) == ("main[0].map", 0)), key=lambda r: r["metadata"]["item"])
    assert [r["metadata"] for r in inner] == [{"item": 0, "log": 4}, {"item": 1, "log": 9}]


async def test_a_log_template_that_fails_to_render_fails_the_step(api):
    execution, rows = await fail(api, task({"log": "{{ _.missing.deeper }}"}), {"n": 1})
    assert "missing" in execution["error"], execution["error"]


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(
            task(
                {"evaluate": {"x": '_["x"] + 1'}},
                {"return": {"result": '_["x"] * 2'}},
                {"evaluate": {"never": '"ran"'}},
            ),
            id="seed",
        ),
        pytest.param(
            task(
                {"evaluate": {"x": "$ _.x + 1"}},
                {"return": {"result": "$ _.x * 2"}},
                {"evaluate": {"never": "ran"}},
            ),
            id="dollar",
        ),
    ],
)
async def test_return_ends_the_workflow_early(api, spec):
    execution, rows = await succeed(api, spec, {"x": 1})
    assert execution["output"] == {"result": 4}
    assert kinds(rows) == ["init", "step", "step", "finish"]
    assert step_at(rows, "main", 1)["output"] == {"result": 4}
    assert not [r for r in rows if where(r) == ("main", 2)]


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(
            task(
                {"evaluate": {"x": '_["x"]'}},
                {"error": 'bad value {{_["x"]}}'},
                {"evaluate": {"never": '"ran"'}},
            ),
            id="seed",
        ),
        pytest.param(
            task(
                {"evaluate": {"x": "$ _.x"}}, {"error": "bad value {{_.x}}"}, {"evaluate": {"never": "ran"}}
            ),
            id="dollar",
        ),
    ],
)
async def test_error_fails_the_execution_with_its_message(api, spec):
    execution, rows = await fail(api, spec, {"x": 7})
    assert "bad value 7" in execution["error"]
    assert kinds(rows) == ["init", "step", "error"]
    assert execution["output"] is None


async def test_a_failing_expression_fails_the_execution_with_a_readable_message(api):
    execution, rows = await fail(api, task({"evaluate": {"x": '_["missing"]'}}), {"a": 1})
    assert "missing" in execution["error"]
    assert kinds(rows) == ["init", "error"]


# if_else and switch ----------------------------------------------------------------------------------------------


IF_ELSE_SEED = task(
    {
        "if": '_["n"] > 5',
        "then": {"evaluate": {"branch": '"then"', "n": '_["n"]'}},
        "else": [{"evaluate": {"branch": '"else"'}}, {"evaluate": {"branch": '_["branch"] + "!"'}}],
    }
)
# The trailing `sleep` (which passes `_` through) puts a `$` value at the top level: the dialect is only
# detected from top-level steps (see test_dollar_dialect_is_detected_from_nested_steps).
TOP_LEVEL_DOLLAR = {"sleep": {"seconds": "$ 0"}}
IF_ELSE_DOLLAR = task(
    {
        "if": "$ _.n > 5",
        "then": {"evaluate": {"branch": "then", "n": "$ _.n"}},
        "else": [{"evaluate": {"branch": "else"}}, {"evaluate": {"branch": "$ _.branch + '!'"}}],
    },
    TOP_LEVEL_DOLLAR,
)


@pytest.mark.parametrize(
    "spec", [pytest.param(IF_ELSE_SEED, id="seed"), pytest.param(IF_ELSE_DOLLAR, id="dollar")]
)
async def test_if_else_takes_then_with_a_single_step(api, spec):
    execution, rows = await succeed(api, spec, {"n": 9})
    assert execution["output"] == {"branch": "then", "n": 9}
    assert step_outputs(rows, "main[0].then") == [{"branch": "then", "n": 9}]
    assert step_outputs(rows, "main[0].else") == []
    assert step_at(rows, "main", 0)["output"] == {"branch": "then", "n": 9}


@pytest.mark.parametrize(
    "spec", [pytest.param(IF_ELSE_SEED, id="seed"), pytest.param(IF_ELSE_DOLLAR, id="dollar")]
)
async def test_if_else_takes_else_with_a_list_of_steps(api, spec):
    execution, rows = await succeed(api, spec, {"n": 1})
    assert execution["output"] == {"branch": "else!"}
    assert step_outputs(rows, "main[0].else") == [{"branch": "else"}, {"branch": "else!"}]
    assert step_outputs(rows, "main[0].then") == []
    first = step_at(rows, "main[0].else", 0)
    assert first["next"]["workflow"] == "main[0].else" and first["next"]["step"] == 1


async def test_if_without_else_passes_its_input_through(api):
    spec = task({"evaluate": {"n": '_["n"]'}}, {"if": '_["n"] > 5', "then": {"evaluate": {"big": "True"}}})
    execution, rows = await succeed(api, spec, {"n": 2})
    assert execution["output"] == {"n": 2}
    assert step_outputs(rows, "main[1].then") == []


SWITCH_SEED = task(
    {
        "switch": [
            {"case": '_["n"] < 0', "then": {"evaluate": {"picked": '"negative"'}}},
            {"case": '_["n"] > 10', "then": {"evaluate": {"picked": '"big"'}}},
            {"case": '_["n"] > 5', "then": {"evaluate": {"picked": '"medium"'}}},
            {
                "case": "_",
                "then": [{"evaluate": {"picked": '"default"'}}, {"evaluate": {"picked": '_["picked"] * 2'}}],
            },
        ]
    }
)
SWITCH_DOLLAR = task(
    {
        "switch": [
            {"case": "$ _.n < 0", "then": {"evaluate": {"picked": "negative"}}},
            {"case": "$ _.n > 10", "then": {"evaluate": {"picked": "big"}}},
            {"case": "$ _.n > 5", "then": {"evaluate": {"picked": "medium"}}},
            {
                "case": "_",
                "then": [{"evaluate": {"picked": "default"}}, {"evaluate": {"picked": "$ _.picked * 2"}}],
            },
        ]
    },
    TOP_LEVEL_DOLLAR,
)


@pytest.mark.parametrize(
    "spec", [pytest.param(SWITCH_SEED, id="seed"), pytest.param(SWITCH_DOLLAR, id="dollar")]
)
@pytest.mark.parametrize(
    ("n", "branch", "picked"),
    [
        (20, 1, "big"),  # cases 1 and 2 are both true: the first one wins
        (7, 2, "medium"),
        (3, 3, "defaultdefault"),
    ],
)
async def test_switch_runs_the_first_truthy_case(api, spec, n, branch, picked):
    execution, rows = await succeed(api, spec, {"n": n})
    assert execution["output"] == {"picked": picked}
    nested = {r["current"]["workflow"] for r in rows if r["current"]["workflow"].startswith("main[0].switch")}
    assert nested == {f"main[0].switch[{branch}]"}


async def test_dollar_dialect_is_detected_from_nested_steps(api):
    spec = task(
        {
            "if": "$ _.n > 5",
            "then": {"evaluate": {"size": "big"}},
            "else": {"evaluate": {"size": "$ str(_.n)"}},
        }
    )
    execution, _ = await succeed(api, spec, {"n": 9})
    assert execution["output"] == {"size": "big"}


async def test_creating_a_task_with_nested_steps_emits_no_warning(api):
    # Regression: dumping nested steps used to make pydantic warn (a 500 under `filterwarnings = error`).
    agent = await create_agent(api)
    response = await api.post(
        f"/agents/{agent['id']}/tasks", json=task({"if": "True", "then": {"evaluate": {"x": "1"}}})
    )
    assert response.status_code == 201, response.text
    # Answered as Julep answers steps: typed, nested ones too.
    assert response.json()["main"][0]["kind_"] == "if_else"
    assert response.json()["main"][0]["then"] == [{"kind_": "evaluate", "evaluate": {"x": "1"}}]


async def test_switch_without_a_matching_case_outputs_null(api):
    spec = task({"switch": [{"case": '_["n"] > 5', "then": {"evaluate": {"big": "True"}}}]})
    execution, _ = await succeed(api, spec, {"n": 1})
    assert execution["output"] is None


# foreach, map_reduce, parallel -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(
            task({"foreach": {"in": 'inputs[0]["xs"]', "do": {"evaluate": {"v": "_ * 10"}}}}), id="seed"
        ),
        pytest.param(task({"foreach": {"in": "$ _.xs", "do": {"evaluate": {"v": "$ _ * 10"}}}}), id="dollar"),
    ],
)
async def test_foreach_runs_serially_and_collects_results_in_order(api, spec):
    execution, rows = await succeed(api, spec, {"xs": [3, 1, 2]})
    assert execution["output"] == [{"v": 30}, {"v": 10}, {"v": 20}]
    inner = [r for r in rows if r["current"]["workflow"] == "main[0].foreach"]
    assert [r["metadata"] for r in inner] == [{"item": 0}, {"item": 1}, {"item": 2}]
    assert [r["output"] for r in inner] == [{"v": 30}, {"v": 10}, {"v": 20}]


async def test_foreach_with_several_steps_chains_them_per_item(api):
    spec = task(
        {
            "foreach": {
                "in": "$ ['a', 'b']",
                "do": [{"evaluate": {"s": "$ _ + '1'"}}, {"evaluate": {"s": "$ _.s + '2'"}}],
            }
        }
    )
    execution, _ = await succeed(api, spec)
    assert execution["output"] == [{"s": "a12"}, {"s": "b12"}]


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(task({"over": '_["xs"]', "map": {"evaluate": {"sq": "_ * _"}}}), id="seed"),
        pytest.param(task({"over": "$ _.xs", "map": {"evaluate": {"sq": "$ _ * _"}}}), id="dollar"),
    ],
)
async def test_map_reduce_default_reduce_is_the_list_of_results_in_order(api, spec):
    xs = [5, 1, 4, 2, 3]
    execution, rows = await succeed(api, spec, {"xs": xs})
    assert execution["output"] == [{"sq": x * x} for x in xs]
    inner = sorted(
        (r for r in rows if r["current"]["workflow"] == "main[0].map"), key=lambda r: r["metadata"]["item"]
    )
    assert [r["output"] for r in inner] == execution["output"]


async def test_map_reduce_dollar_custom_reduce_with_initial(api):
    spec = task(
        {"over": "$ _.xs", "map": {"evaluate": {"sq": "$ _ * _"}}, "reduce": "$ results + _.sq", "initial": 0}
    )
    execution, _ = await succeed(api, spec, {"xs": [1, 2, 3, 4]})
    assert execution["output"] == 30


async def test_map_reduce_seed_custom_reduce_starts_from_an_empty_list(api):
    spec = task(
        {"over": '_["xs"]', "map": {"evaluate": {"sq": "_ * _"}}, "reduce": 'results + [_["sq"] + 1]'}
    )
    execution, _ = await succeed(api, spec, {"xs": [1, 2, 3]})
    assert execution["output"] == [2, 5, 10]


# Each item waits for input, so the open waits are the items running at once.
WAITING_MAP = task({"over": "$ _.xs", "parallelism": 2, "map": {"wait_for_input": {"info": {"item": "$ _"}}}})


def waiting_items(rows: list[dict[str, Any]]) -> list[str]:
    return [r["output"]["info"]["item"] for r in rows if r["type"] == "wait"]


async def test_map_reduce_parallelism_bounds_the_items_in_flight(api):
    execution_id = await launch(api, WAITING_MAP, {"xs": ["a", "b", "c"]})
    await wait_for_status(api, execution_id, {"awaiting_input"})
    await rows_until(api, execution_id, "wait", 2)
    await asyncio.sleep(0.5)  # give a third item every chance to start if the window did not hold
    assert sorted(waiting_items(await transitions(api, execution_id))) == ["a", "b"]
    assert (await cancel(api, execution_id))["status"] == "cancelled"
    assert kinds(await transitions(api, execution_id))[-1] == "cancelled"


async def test_map_reduce_window_slides_as_waiting_items_are_resumed(api, temporal_env):
    execution_id = await launch(api, WAITING_MAP, {"xs": ["a", "b", "c"]})
    try:
        await rows_until(api, execution_id, "wait", 2)
        await resume(api, execution_id, "r1")
        rows = await rows_until(api, execution_id, "wait", 3, timeout=10)
        assert waiting_items(rows)[-1] == "c"
        await resume(api, execution_id, "r2")
        await resume(api, execution_id, "r3")
        execution = await wait_for_status(api, execution_id, timeout=10)
        assert execution["status"] == "succeeded", execution
        assert sorted(execution["output"]) == ["r1", "r2", "r3"]
    finally:
        await end_workflow(temporal_env, execution_id)


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(
            task(
                {
                    "parallel": [
                        {"evaluate": {"a": '_["n"] + 1'}},
                        [{"evaluate": {"b": '_["n"] * 2'}}, {"evaluate": {"b": '_["b"] + 1'}}],
                    ]
                }
            ),
            id="seed",
        ),
        pytest.param(
            task(
                {
                    "parallel": [
                        {"evaluate": {"a": "$ _.n + 1"}},
                        [{"evaluate": {"b": "$ _.n * 2"}}, {"evaluate": {"b": "$ _.b + 1"}}],
                    ]
                }
            ),
            id="dollar",
        ),
    ],
)
async def test_parallel_outputs_the_list_of_branch_outputs(api, spec):
    execution, rows = await succeed(api, spec, {"n": 10})
    assert execution["output"] == [{"a": 11}, {"b": 21}]
    assert step_outputs(rows, "main[0].parallel[0]") == [{"a": 11}]
    assert step_outputs(rows, "main[0].parallel[1]") == [{"b": 20}, {"b": 21}]


# sleep -----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(task({"evaluate": {"x": "1"}}, {"sleep": 0}), id="seed"),
        pytest.param(task({"evaluate": {"x": "$ 1"}}, {"sleep": {"seconds": 0}}), id="dollar"),
    ],
)
async def test_sleep_zero_passes_the_value_through_without_a_timer(api, temporal_env, spec):
    execution, rows = await succeed(api, spec)
    assert execution["output"] == {"x": 1}
    assert step_at(rows, "main", 1)["output"] == {"x": 1}
    assert await timers(temporal_env, execution["id"]) == []


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(task({"evaluate": {"s": '_["s"]'}}, {"sleep": '_["s"]'}), id="seed"),
        pytest.param(task({"evaluate": {"s": "$ _.s"}}, {"sleep": {"seconds": "$ _.s"}}), id="dollar"),
    ],
)
async def test_sleep_one_second_is_a_durable_timer(api, temporal_env, spec):
    execution, rows = await succeed(api, spec, {"s": 1})
    assert execution["output"] == {"s": 1}
    assert await timers(temporal_env, execution["id"]) == [1.0]
    slept = datetime.fromisoformat(rows[-1]["created_at"]) - datetime.fromisoformat(rows[1]["created_at"])
    assert slept >= timedelta(seconds=1)


async def test_sleep_units_add_up(api, temporal_env):
    execution_id = await launch(api, task({"sleep": {"minutes": "$ 1", "seconds": 30}}))
    assert await started_timers(temporal_env, execution_id) == [90.0]
    assert (await cancel(api, execution_id))["status"] == "cancelled"


# yield -----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(
            task(
                {"evaluate": {"n": 'inputs[0]["n"] + 1'}},
                {"workflow": "double", "arguments": "inputs[0]"},
                {"evaluate": {"after": '_["y"] + 1'}},
                double=[{"evaluate": {"y": 'inputs[0]["n"] * 2'}}],
            ),
            id="seed",
        ),
        pytest.param(
            task(
                {"evaluate": {"n": "$ _.n + 1"}},
                {"workflow": "double", "arguments": {"n": "$ steps[0].input.n"}},
                {"evaluate": {"after": "$ _.y + 1"}},
                double=[{"evaluate": {"y": "$ inputs[0].n * 2"}}],
            ),
            id="dollar",
        ),
    ],
)
async def test_yield_runs_a_named_workflow_in_its_own_scope(api, spec):
    execution, rows = await succeed(api, spec, {"n": 5})
    assert execution["output"] == {"after": 11}
    assert kinds(rows) == ["init", "step", "init_branch", "step", "finish_branch", "step", "step", "finish"]
    init_branch, inner, finish_branch = rows[2], rows[3], rows[4]
    assert init_branch["output"] == {"n": 5}
    assert where(init_branch) == ("double", 0) and where(inner) == ("double", 0)
    assert inner["output"] == {"y": 10} and finish_branch["output"] == {"y": 10}
    assert (
        init_branch["current"]["scope_id"]
        == inner["current"]["scope_id"]
        == finish_branch["current"]["scope_id"]
    )
    assert init_branch["current"]["scope_id"] != rows[0]["current"]["scope_id"]
    assert step_at(rows, "main", 1)["output"] == {"y": 10}


async def test_yield_recursion_stops_with_a_counter(api):
    spec = load("""
name: countdown
main:
  - workflow: countdown
    arguments: {n: '$ _.n', depth: 0}
countdown:
  - if: $ _.n <= 0
    then:
      return: {depth: $ _.depth}
  - workflow: countdown
    arguments: {n: $ _.n - 1, depth: $ _.depth + 1}
""")
    execution, rows = await succeed(api, spec, {"n": 3})
    assert execution["output"] == {"depth": 3}
    branches = [r for r in rows if r["type"] == "init_branch"]
    assert [r["output"]["n"] for r in branches] == [3, 2, 1, 0]
    assert len({r["current"]["scope_id"] for r in branches}) == 4
    assert kinds(rows).count("finish_branch") == 0  # every yield here is a tail yield: no frame to return to
    assert all(r["output"] == {"depth": 3} for r in rows if r["type"] == "finish_branch")


# wait_for_input, tools -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(
            task(
                {"wait_for_input": {"info": {"question": '"Name?"', "n": '_["n"]'}}},
                {"evaluate": {"greeting": '"Hi " + _["name"]'}},
            ),
            id="seed",
        ),
        pytest.param(
            task(
                {"wait_for_input": {"info": {"question": "Name?", "n": "$ _.n"}}},
                {"evaluate": {"greeting": "$ 'Hi ' + _.name"}},
            ),
            id="dollar",
        ),
    ],
)
async def test_wait_for_input_parks_until_resumed_and_the_input_is_the_output(api, spec):
    execution_id = await launch(api, spec, {"n": 3})
    execution = await wait_for_status(api, execution_id, {"awaiting_input"})
    rows = await transitions(api, execution_id)
    assert kinds(rows) == ["init", "wait"]
    assert rows[-1]["output"] == {"info": {"question": "Name?", "n": 3}}
    assert where(rows[-1]) == ("main", 0)

    resumed = await resume(api, execution_id, {"name": "Ada"})
    assert resumed["status"] in {"awaiting_input", "running", "succeeded"}
    execution = await wait_for_status(api, execution_id)
    assert execution["status"] == "succeeded", execution
    assert execution["output"] == {"greeting": "Hi Ada"}
    rows = await transitions(api, execution_id)
    assert kinds(rows) == ["init", "wait", "resume", "step", "step", "finish"]
    assert rows[2]["output"] == {"name": "Ada"} and where(rows[2]) == ("main", 0)
    assert step_at(rows, "main", 0)["output"] == {"name": "Ada"}


async def test_resume_is_refused_unless_awaiting_input(api):
    execution_id = await launch(api, task({"evaluate": {"x": "1"}}))
    await wait_for_status(api, execution_id)
    response = await api.put(f"/executions/{execution_id}", json={"status": "running", "input": {}})
    assert response.status_code == 409, response.text


LOOKUP = {
    "name": "lookup",
    "type": "function",
    "function": {"description": "look something up", "parameters": {"type": "object"}},
}


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(
            task(
                {"tool": {"name": "lookup", "arguments": {"q": '_["q"]', "limit": "3"}}},
                {"evaluate": {"answer": '_["answer"].upper()'}},
                tools=[LOOKUP],
            ),
            id="seed",
        ),
        pytest.param(
            task(
                {"tool": "lookup", "arguments": {"q": "$ _.q", "limit": 3}},
                {"evaluate": {"answer": "$ _.answer.upper()"}},
                tools=[LOOKUP],
            ),
            id="dollar",
        ),
    ],
)
async def test_function_tool_call_waits_for_the_result(api, spec):
    execution_id = await launch(api, spec, {"q": "mint"})
    await wait_for_status(api, execution_id, {"awaiting_input"})
    wait = (await rows_until(api, execution_id, "wait"))[-1]
    assert wait["output"]["tool_call"]["name"] == "lookup"
    assert wait["output"]["tool_call"]["arguments"] == {"q": "mint", "limit": 3}

    await resume(api, execution_id, {"answer": "fresh"})
    execution = await wait_for_status(api, execution_id)
    assert execution["status"] == "succeeded", execution
    assert execution["output"] == {"answer": "FRESH"}
    rows = await transitions(api, execution_id)
    assert step_at(rows, "main", 0)["output"] == {"answer": "fresh"}


class _Recorder(BaseHTTPRequestHandler):
    """Answers every request with JSON describing it, and records it on the server."""

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        parts = urlsplit(self.path)
        seen = {
            "method": self.command,
            "path": parts.path,
            "query": parse_qs(parts.query),
            "header": self.headers.get("X-Test"),
            "body": json.loads(body) if body else None,
        }
        self.server.requests.append(seen)  # type: ignore[attr-defined]
        payload = json.dumps({"ok": True, **seen}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = _answer

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def http_server() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    server.requests = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


def fetch_tool(port: int, method: str = "GET") -> dict[str, Any]:
    return {
        "name": "fetch",
        "type": "api_call",
        "api_call": {
            "method": method,
            "url": f"http://127.0.0.1:{port}/items/{{{{arguments.id}}}}",
            "params": {"q": "{{arguments.q}}"},
            "headers": {"X-Test": "from-spec"},
        },
    }


async def test_api_call_tool_seed_templates_url_and_params_from_arguments(api, http_server):
    spec = task(
        {
            "tool": {
                "name": "fetch",
                "arguments": {"id": '_["id"]', "q": '"hello"', "params": {"extra": '"1"'}},
            }
        },
        {"evaluate": {"echo": '_["json"]["path"]', "status": '_["status_code"]'}},
        tools=[fetch_tool(http_server.server_port)],
    )
    execution, rows = await succeed(api, spec, {"id": 7})
    assert execution["output"] == {"echo": "/items/7", "status": 200}
    assert http_server.requests == [
        {
            "method": "GET",
            "path": "/items/7",
            "query": {"q": ["hello"], "extra": ["1"]},
            "header": "from-spec",
            "body": None,
        }
    ]
    call = step_at(rows, "main", 0)["output"]
    assert call["status_code"] == 200 and call["json"]["ok"] is True
    assert json.loads(call["content"])["path"] == "/items/7"


async def test_api_call_tool_dollar_posts_json_from_arguments(api, http_server):
    spec = task(
        {
            "tool": "fetch",
            "arguments": {"id": "$ _.id", "q": "literal text", "json": {"total": "$ _.id * 2"}},
        },
        tools=[fetch_tool(http_server.server_port, "POST")],
    )
    execution, _ = await succeed(api, spec, {"id": 7})
    assert execution["output"]["status_code"] == 200
    assert http_server.requests == [
        {
            "method": "POST",
            "path": "/items/7",
            "query": {"q": ["literal text"]},
            "header": "from-spec",
            "body": {"total": 14},
        }
    ]


# values Postgres cannot store --------------------------------------------------------------------------------------

NUL, SURROGATE = "NUL character", "lone surrogate"


def assert_no_database_internals(message: str) -> None:
    for internal in ("DETAIL", "query argument", "invalid input syntax", "SELECT", "INSERT"):
        assert internal not in message, message


@pytest.mark.parametrize(
    ("spec", "where", "problem"),
    [
        pytest.param(task({"evaluate": {"x": "$ 'a\\x00b'"}}), "the output of main[0] at x", NUL, id="nul"),
        pytest.param(
            task({"evaluate": {"x": "'a\\x00b'"}}), "the output of main[0] at x", NUL, id="nul_seed"
        ),
        pytest.param(
            task({"evaluate": {"x": "$ 'a\\ud800b'"}}), "the output of main[0] at x", SURROGATE, id="high"
        ),
        pytest.param(
            task({"evaluate": {"x": "$ '\\udfff'"}}), "the output of main[0] at x", SURROGATE, id="low"
        ),
        pytest.param(
            task({"evaluate": {"x": "$ '\\udc00\\ud800'"}}),
            "the output of main[0] at x",
            SURROGATE,
            id="pair_reversed",
        ),
        pytest.param(
            task({"evaluate": {"x": "$ json.loads('\"\\\\u0000\"')"}}),
            "the output of main[0] at x",
            NUL,
            id="nul_from_json_loads",
        ),
        pytest.param(
            task({"evaluate": {"x": "$ base64.b64decode('AA==')"}}),
            "the output of main[0] at x",
            NUL,
            id="nul_from_base64",
        ),
        pytest.param(
            task({"evaluate": {"x": "$ urllib.parse.unquote('%00')"}}),
            "the output of main[0] at x",
            NUL,
            id="nul_from_unquote",
        ),
        pytest.param(
            task({"evaluate": {"x": "$ {'k\\x00': 1}"}}),
            "the output of main[0] at x['k\\x00'] has a key that",
            NUL,
            id="nul_in_a_key",
        ),
        pytest.param(
            task({"evaluate": {"x": "$ 1"}}, {"set": {"s": "$ '\\ud800'"}}),
            "the output of main[1] at s",
            SURROGATE,
            id="state",
        ),
        pytest.param(task({"log": "a{{ '\\x00' }}b"}), "the log text of main[0]", NUL, id="template"),
        pytest.param(
            task({"evaluate": {"x": "$ 1"}}, {"return": {"r": "$ '\\ud800'"}}),
            "the output of main[1] at r",
            SURROGATE,
            id="return",
        ),
        pytest.param(
            task({"over": "$ [1, 2]", "map": {"evaluate": {"x": "$ 'ok' if _ == 1 else 'no\\x00'"}}}),
            "the output of main[0].map[0] at x",
            NUL,
            id="map_item",
        ),
        pytest.param(
            task(
                {"workflow": "helper", "arguments": {"a": "$ 'a\\x00'"}},
                {"evaluate": {"never": "$ 1"}},
                helper=[{"evaluate": {"y": "$ 1"}}],
            ),
            "the arguments of workflow 'helper' at a",
            NUL,
            id="yield_arguments",
        ),
        pytest.param(
            task({"wait_for_input": {"info": {"q": "$ '\\ud800'"}}}),
            "the output of main[0] at info.q",
            SURROGATE,
            id="wait_info",
        ),
    ],
)
async def test_a_value_postgres_cannot_store_fails_its_step(api, spec, where, problem):
    """Once the workflow hands such a value to the transition writer, every retry fails the same way: the
    execution used to sit in `starting` for minutes. Now the step fails at once, saying where."""
    execution, rows = await fail(api, spec)
    assert where in execution["error"] and problem in execution["error"], execution["error"]
    assert_no_database_internals(execution["error"])


@pytest.mark.parametrize(
    "text, shown",
    [
        pytest.param("bad \\x00 value", "bad \\x00 value", id="nul"),
        pytest.param("bad \\ud800", "bad \\ud800", id="surrogate"),
    ],
)
async def test_an_error_step_message_with_unstorable_text_is_recorded_escaped(api, text, shown):
    execution, rows = await fail(api, task({"error": f"$ '{text}'"}))
    assert shown in execution["error"], execution["error"]


def _odd_answer(request: Any) -> tuple[int, dict[str, str], bytes]:
    bodies = {
        "/nul-json": (b'{"a": "x\\u0000y"}', "application/json"),
        "/surrogate-json": (b'{"b": ["ok", "\\ud800"]}', "application/json"),
        "/nul-text": (b"before\x00after", "text/plain"),
    }
    body, content_type = bodies[request.path]
    return 200, {"Content-Type": content_type}, body


@pytest.mark.parametrize(
    "path, where, problem",
    [
        pytest.param("/nul-json", "the output of main[0] at json.a", NUL, id="nul_escape_in_json"),
        pytest.param(
            "/surrogate-json", "the output of main[0] at json.b[1]", SURROGATE, id="surrogate_in_json"
        ),
        pytest.param("/nul-text", "the output of main[0] at content", NUL, id="nul_byte_in_text"),
    ],
)
async def test_an_api_call_answer_postgres_cannot_store_fails_the_step(api, path, where, problem):
    with LocalServer(_odd_answer) as server:
        tool = {
            "name": "fetch",
            "type": "api_call",
            "api_call": {"method": "GET", "url": server.url.rstrip("/") + path},
        }
        execution, rows = await fail(api, task({"tool": "fetch", "arguments": {}}, tools=[tool]))
    assert where in execution["error"] and problem in execution["error"], execution["error"]
    assert_no_database_internals(execution["error"])
    assert kinds(rows) == ["init", "error"]


def _five_megabytes(request: Any) -> tuple[int, dict[str, str], bytes]:
    records = [{"id": i, "name": f"item {i}", "tags": ["a", "b"], "text": "x" * 80} for i in range(40_000)]
    return 200, {"Content-Type": "application/json"}, json.dumps({"items": records}).encode()


async def test_steps_after_a_5_mb_api_answer_read_it_cheaply(api):
    """A membership test, a read and len() over a big answer cost what they do, not its size (charged by
    the answer's deep size, each would pass the step's budget)."""
    with LocalServer(_five_megabytes) as server:
        tool = {"name": "fetch", "type": "api_call", "api_call": {"method": "GET", "url": server.url}}
        spec = task(
            {"tool": "fetch", "arguments": {}},
            {"evaluate": {"has_json": "$ 'json' in _", "items": "$ _.json.items"}},
            {"evaluate": {"count": "$ len(_.items)", "first": "$ _.items[0].name", "ok": "$ _.has_json"}},
            tools=[tool],
        )
        execution, rows = await succeed(api, spec)
    assert len(server.requests) == 1
    assert execution["output"] == {"count": 40_000, "first": "item 0", "ok": True}
    assert len(step_at(rows, "main", 1)["output"]["items"]) == 40_000


# cancellation ----------------------------------------------------------------------------------------------------


async def test_cancel_while_sleeping(api):
    spec = task({"evaluate": {"x": "1"}}, {"sleep": 3600}, {"evaluate": {"never": '"ran"'}})
    execution_id = await launch(api, spec)
    await rows_until(api, execution_id, "step")  # the evaluate step is flushed just before the timer starts
    execution = await cancel(api, execution_id)
    assert execution["status"] == "cancelled", execution
    rows = await transitions(api, execution_id)
    assert kinds(rows) == ["init", "step", "cancelled"]
    assert where(rows[-1])[0] == "main"


async def test_cancel_while_waiting_for_input(api):
    spec = task({"wait_for_input": {"info": {"q": "$ 'why?'"}}}, {"evaluate": {"never": "ran"}})
    execution_id = await launch(api, spec)
    await wait_for_status(api, execution_id, {"awaiting_input"})
    execution = await cancel(api, execution_id)
    assert execution["status"] == "cancelled", execution
    rows = await transitions(api, execution_id)
    assert kinds(rows) == ["init", "wait", "cancelled"]
    response = await api.put(f"/executions/{execution_id}", json={"status": "running", "input": {}})
    assert response.status_code == 409, response.text


# prompt, expression helpers ----------------------------------------------------------------------------------------


async def test_a_prompt_with_no_model_configured_fails_clearly(api):
    spec = task({"evaluate": {"x": "1"}}, {"prompt": 'Say {{_["x"]}}'})
    execution, rows = await fail(api, spec)
    assert "no OpenAI model is configured: set OPENAI_API_KEY" in execution["error"]
    assert kinds(rows) == ["init", "step", "error"]


async def test_expression_helpers_in_an_evaluate_step(api):
    spec = task(
        {
            "evaluate": {
                "pick": '_["topics"][randint(len(_["topics"]))]',
                "dice": "randint(1, 6)",
                "dumped": 'dump_json({"a": [1, 2]})',
                "loaded": 'json.loads(\'{"b": 3}\')["b"]',
                "roundtrip": 'load_json(json.dumps(_["topics"]))',
                "digits": 'search_regex("[0-9]+", "order 1234 shipped")',
                "group": 're.search("id=([a-z]+)", "x id=abc y").group(1)',
                "now": "datetime.now().isoformat()",
                "year": "datetime.now().year",
            }
        }
    )
    before = datetime.now(UTC)
    execution, _ = await succeed(api, spec, {"topics": ["a", "b", "c"]})
    out = execution["output"]
    assert out["pick"] in {"a", "b", "c"}
    assert 1 <= out["dice"] <= 6
    assert json.loads(out["dumped"]) == {"a": [1, 2]}
    assert out["loaded"] == 3 and out["roundtrip"] == ["a", "b", "c"]
    assert out["digits"] == "1234" and out["group"] == "abc"
    now = datetime.fromisoformat(out["now"])
    assert now.tzinfo is not None and abs(now - before) < timedelta(minutes=5)
    assert out["year"] == now.year
