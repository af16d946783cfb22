"""if/else, switch and yield: which steps run, where their transitions are written, and tail calls.
The unit-level mirror of tests/test_steps.py and tests/test_loops.py."""

from __future__ import annotations

import pytest

from tests.unit.harness import task

# if / else -------------------------------------------------------------------------------------------------

IF_ELSE_SEED = task(
    {
        "if": '_["n"] > 5',
        "then": {"evaluate": {"branch": '"then"', "n": '_["n"]'}},
        "else": [{"evaluate": {"branch": '"else"'}}, {"evaluate": {"branch": '_["branch"] + "!"'}}],
    }
)
IF_ELSE_DOLLAR = task(
    {
        "if": "$ _.n > 5",
        "then": {"evaluate": {"branch": "then", "n": "$ _.n"}},
        "else": [{"evaluate": {"branch": "else"}}, {"evaluate": {"branch": "$ _.branch + '!'"}}],
    }
)
BOTH = [pytest.param(IF_ELSE_SEED, id="seed"), pytest.param(IF_ELSE_DOLLAR, id="dollar")]


@pytest.mark.parametrize("spec", BOTH)
async def test_if_runs_then_when_true_and_outputs_its_result(mint, spec):
    done = await mint.succeed(spec, {"n": 9})
    assert done.output == {"branch": "then", "n": 9}
    assert done.outputs("main[0].then") == [{"branch": "then", "n": 9}]
    assert done.outputs("main[0].else") == []
    assert done.step("main", 0)["output"] == {"branch": "then", "n": 9}


@pytest.mark.parametrize("spec", BOTH)
async def test_if_runs_else_when_false_chaining_its_steps(mint, spec):
    done = await mint.succeed(spec, {"n": 1})
    assert done.output == {"branch": "else!"}
    assert done.outputs("main[0].else") == [{"branch": "else"}, {"branch": "else!"}]
    first = done.step("main[0].else", 0)
    assert first["next"]["workflow"] == "main[0].else" and first["next"]["step"] == 1
    assert done.step("main[0].else", 1)["next"] is None


async def test_if_without_else_passes_its_input_through(mint):
    spec = task({"evaluate": {"n": '_["n"]'}}, {"if": '_["n"] > 5', "then": {"evaluate": {"big": "True"}}})
    done = await mint.succeed(spec, {"n": 2})
    assert done.output == {"n": 2}
    assert done.outputs("main[1].then") == []


async def test_a_branchs_steps_run_in_the_workflows_scope(mint):
    done = await mint.succeed(IF_ELSE_DOLLAR, {"n": 1})
    assert {t["current"]["scope_id"] for t in done.transitions} == {
        done.transitions[0]["current"]["scope_id"]
    }


# switch ------------------------------------------------------------------------------------------------------

SWITCH = task(
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
    }
)


@pytest.mark.parametrize(
    ("n", "branch", "picked"),
    [
        pytest.param(20, 1, "big", id="the-first-true-case-wins"),
        pytest.param(7, 2, "medium", id="a-later-case"),
        pytest.param(3, 3, "defaultdefault", id="underscore-is-the-default"),
    ],
)
async def test_switch_runs_the_first_case_that_is_true(mint, n, branch, picked):
    done = await mint.succeed(SWITCH, {"n": n})
    assert done.output == {"picked": picked}
    nested = {t["current"]["workflow"] for t in done.transitions if t["current"]["workflow"] != "main"}
    assert nested == {f"main[0].switch[{branch}]"}


async def test_switch_without_a_matching_case_outputs_null(mint):
    spec = task({"switch": [{"case": '_["n"] > 5', "then": {"evaluate": {"big": "True"}}}]})
    done = await mint.succeed(spec, {"n": 1})
    assert done.output is None


# yield -------------------------------------------------------------------------------------------------------


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
async def test_yield_runs_a_named_workflow_in_its_own_scope_and_carries_on_with_its_output(mint, spec):
    done = await mint.succeed(spec, {"n": 5})
    assert done.output == {"after": 11}
    assert done.types == ["init", "step", "init_branch", "step", "finish_branch", "step", "step", "finish"]
    init_branch, inner, finish_branch = done.transitions[2:5]
    assert init_branch["output"] == {"n": 5}
    assert init_branch["current"]["workflow"] == "double" and inner["current"]["workflow"] == "double"
    assert inner["output"] == finish_branch["output"] == {"y": 10}
    scopes = {
        init_branch["current"]["scope_id"],
        inner["current"]["scope_id"],
        finish_branch["current"]["scope_id"],
    }
    assert len(scopes) == 1 and scopes != {done.transitions[0]["current"]["scope_id"]}
    assert done.step("main", 1)["output"] == {"y": 10}


async def test_yield_without_arguments_passes_its_input(mint):
    spec = task({"workflow": "echo"}, {"evaluate": {"got": "$ _"}}, echo=[{"evaluate": {"x": "$ _.x"}}])
    done = await mint.succeed(spec, {"x": 3})
    assert done.output == {"got": {"x": 3}}


async def test_a_yield_as_the_last_step_is_a_tail_call_with_no_finish_branch(mint):
    spec = task({"evaluate": {"n": "$ _.n"}}, {"workflow": "tail"}, tail=[{"evaluate": {"done": "$ _.n"}}])
    done = await mint.succeed(spec, {"n": 4})
    assert done.output == {"done": 4}
    assert done.types == ["init", "step", "init_branch", "step", "finish"]
    assert done.transitions[-1]["current"]["workflow"] == "tail"  # the run ended in the callee's frame


COUNTDOWN = task(
    {"workflow": "countdown", "arguments": {"n": "$ _.n", "depth": 0}},
    countdown=[
        {"if": "$ _.n <= 0", "then": {"return": {"depth": "$ _.depth"}}},
        {"workflow": "countdown", "arguments": {"n": "$ _.n - 1", "depth": "$ _.depth + 1"}},
    ],
)


async def test_a_recursive_tail_yield_stops_with_a_counter(mint):
    done = await mint.succeed(COUNTDOWN, {"n": 3})
    assert done.output == {"depth": 3}
    branches = done.of_type("init_branch")
    assert [t["output"]["n"] for t in branches] == [3, 2, 1, 0]
    assert len({t["current"]["scope_id"] for t in branches}) == 4
    assert "finish_branch" not in done.types


IF_LOOP = task(
    {
        "if": "$ _.i < _.n",
        "then": {"workflow": "main", "arguments": {"i": "$ _.i + 1", "n": "$ _.n"}},
        "else": {"return": "$ _"},
    }
)


async def test_a_yield_at_the_end_of_an_if_branch_is_a_tail_call(mint):
    done = await mint.succeed(IF_LOOP, {"i": 0, "n": 300})
    assert done.output == {"i": 300, "n": 300}
    assert done.types.count("init_branch") == 300
    assert "finish_branch" not in done.types
    # Nothing returns to a branch that yielded in tail position: no step transition for the if around it.
    assert len([t for t in done.at("main") if t["current"]["step"] == 0]) == 1  # the last round's `else`


SWITCH_LOOP = task(
    {"evaluate": {"i": "$ _.i", "n": "$ _.n"}},
    {
        "if": "$ True",
        "then": {
            "switch": [
                {"case": "$ _.i >= _.n", "then": {"return": {"rounds": "$ _.i"}}},
                {"case": "_", "then": [{"evaluate": {"i": "$ _.i + 1", "n": "$ _.n"}}, {"workflow": "hop"}]},
            ]
        },
    },
    hop=[{"workflow": "main"}],
)


async def test_a_yield_at_the_end_of_a_switch_branch_nested_in_an_if_is_a_tail_call(mint):
    done = await mint.succeed(SWITCH_LOOP, {"i": 0, "n": 100})
    assert done.output == {"rounds": 100}
    assert done.types.count("init_branch") == 200  # main -> hop -> main, 100 times
    assert "finish_branch" not in done.types


def recursion(then: list[dict]) -> dict:
    return task(
        {"workflow": "down"},
        down=[{"if": "$ _.n > 0", "then": then, "else": {"evaluate": {"depth": "$ 0"}}}],
    )


NON_TAIL = recursion(
    [{"workflow": "down", "arguments": {"n": "$ _.n - 1"}}, {"evaluate": {"depth": "$ _.depth + 1"}}]
)


async def test_a_yield_that_is_not_last_nests_and_counts_back_up(mint):
    done = await mint.succeed(NON_TAIL, {"n": 5})
    assert done.output == {"depth": 5}
    # main's yield to `down` is a tail call; the five below it nest, and each returns.
    assert done.types.count("init_branch") == 1 + 5
    assert done.types.count("finish_branch") == 5


async def test_nested_yields_stop_at_200_deep_with_the_depth_guards_message(mint):
    done = await mint.fail(NON_TAIL, {"n": 250})
    assert "workflow 'down' would nest more than 200 yields deep" in done.error
    assert done.types.count("init_branch") == 1 + 200  # the tail call from main, then 200 nested
