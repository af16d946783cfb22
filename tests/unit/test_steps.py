"""The steps the interpreter runs itself (evaluate, set, get, log, return, error), run by the real workflow
and read back from the transitions it writes. The unit-level mirror of tests/test_steps.py."""

from __future__ import annotations

import pytest

from tests.unit.harness import task

# evaluate ----------------------------------------------------------------------------------------------------


async def test_evaluate_outputs_the_mapping_of_its_results(mint):
    done = await mint.succeed(task({"evaluate": {"x": "$ _.a + 1", "word": "$ 'hi'"}}), {"a": 41})
    assert done.output == {"x": 42, "word": "hi"}
    assert done.step("main", 0)["output"] == {"x": 42, "word": "hi"}


async def test_evaluate_in_the_seed_dialect_reads_bare_python(mint):
    spec = task({"evaluate": {"x": '_["a"] + 1', "word": '"hello"', "both": 'str(_["a"]) + "!"'}})
    done = await mint.succeed(spec, {"a": 41})
    assert done.output == {"x": 42, "word": "hello", "both": "41!"}


async def test_evaluate_in_the_dollar_dialect_keeps_literals_and_renders_templates(mint):
    spec = task(
        {"evaluate": {"x": "$ _.a + 1", "literal": "1 + 1", "greeting": "hi {{ _.a }}", "f": '$ f"n={_.a}"'}}
    )
    done = await mint.succeed(spec, {"a": 41})
    assert done.output == {"x": 42, "literal": "1 + 1", "greeting": "hi 41", "f": "n=41"}


async def test_every_evaluate_key_reads_the_same_input(mint):
    done = await mint.succeed(task({"evaluate": {"a": "$ _.n + 1", "b": "$ _.n * 10"}}), {"n": 1})
    assert done.output == {"a": 2, "b": 10}


async def test_the_first_steps_input_is_the_execution_input_and_each_next_reads_the_last_output(mint):
    spec = task(
        {"evaluate": {"a": 'inputs[0]["n"] * 2'}},
        {"evaluate": {"b": '_["a"] + 1', "input_is_previous_output": "inputs[1] == outputs[0]"}},
        {"evaluate": {"c": 'outputs[0]["a"] + outputs[1]["b"] + inputs[0]["n"]', "seen": "len(outputs)"}},
    )
    done = await mint.succeed(spec, {"n": 5})
    assert done.outputs("main") == [
        {"a": 10},
        {"b": 11, "input_is_previous_output": True},
        {"c": 26, "seen": 2},
    ]
    assert done.transitions[0]["output"] == {"n": 5}  # the init transition records the input


async def test_steps_are_read_by_index_and_by_label(mint):
    spec = task(
        {"label": "first", "evaluate": {"a": "$ _.n * 2"}},
        {"evaluate": {"b": "$ steps[0].output.a + 1", "in0": "$ steps[0].input.n"}},
        {"evaluate": {"c": "$ steps['first'].output.a + _.b", "first_in": "$ steps['first'].input"}},
    )
    done = await mint.succeed(spec, {"n": 5})
    assert done.output == {"c": 21, "first_in": {"n": 5}}
    assert done.step("main", 0)["step_label"] == "first"
    assert done.step("main", 1)["step_label"] is None


async def test_agent_task_and_execution_are_readable_in_expressions(mint):
    spec = task(
        {"evaluate": {"agent": "$ agent.name", "task": "$ task.name", "meta": "$ execution.metadata.k"}}
    )
    done = await mint.succeed(spec, metadata={"k": "v"})
    assert done.output == {"agent": "tester", "task": "unit", "meta": "v"}


async def test_a_failing_expression_fails_the_execution_naming_what_failed(mint):
    done = await mint.fail(task({"evaluate": {"x": '_["missing"]'}}), {"a": 1})
    assert "missing" in done.error
    assert done.types == ["init", "error"]


async def test_an_integer_too_long_for_json_fails_the_step_saying_so(mint):
    done = await mint.fail(task({"evaluate": {"n": "$ 10 ** 5000"}}))
    assert "integer too long" in done.error


async def test_a_nul_character_in_an_output_fails_the_step_naming_where(mint):
    done = await mint.fail(task({"evaluate": {"x": "$ 'a\\x00b'"}}))
    assert "the output of main[0] at x" in done.error and "NUL character" in done.error


# set / get ---------------------------------------------------------------------------------------------------


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
async def test_set_outputs_the_values_set_and_get_reads_them_back(mint, spec):
    done = await mint.succeed(spec, {"n": 5})
    assert done.outputs("main") == [{"count": 10}, {"x": "ignored"}, 10, {"plus": 20}]


async def test_get_of_a_key_never_set_is_null(mint):
    done = await mint.succeed(task({"get": "missing"}))
    assert done.output is None


async def test_every_set_key_reads_the_same_input(mint):
    done = await mint.succeed(task({"set": {"a": "$ _.n", "b": "$ _.n + 1"}}, {"get": "b"}), {"n": 1})
    assert done.outputs("main") == [{"a": 1, "b": 2}, 2]


async def test_state_is_shared_with_a_yielded_workflow(mint):
    spec = task(
        {"set": {"who": "$ 'main'"}},
        {"workflow": "helper"},
        {"get": "who"},
        helper=[{"evaluate": {"saw": "$ state.who"}}, {"set": {"who": "$ 'helper'"}}],
    )
    done = await mint.succeed(spec)
    assert done.output == "helper"
    assert done.outputs("helper")[0] == {"saw": "main"}


# log -----------------------------------------------------------------------------------------------------------


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
async def test_log_passes_its_input_through_and_records_its_text_in_the_metadata(mint, spec):
    done = await mint.succeed(spec, {"name": "Ada", "n": 1})
    assert done.output == {"name": "Ada", "n": 1}
    logged = done.step("main", len(spec["main"]) - 1)
    assert logged["output"] == {"name": "Ada", "n": 1}
    assert logged["metadata"]["log"] == "Hello Ada (2)"


async def test_log_of_an_expression_records_its_value(mint):
    done = await mint.succeed(task({"log": "$ _.n * 2"}), {"n": 21})
    assert done.step("main", 0)["metadata"] == {"log": 42}
    assert done.output == {"n": 21}


async def test_a_log_template_that_fails_to_render_fails_the_step(mint):
    done = await mint.fail(task({"log": "{{ _.missing.deeper }}"}), {"n": 1})
    assert "missing" in done.error


# return ----------------------------------------------------------------------------------------------------------


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
async def test_return_ends_the_workflow_with_its_value(mint, spec):
    done = await mint.succeed(spec, {"x": 1})
    assert done.output == {"result": 4}
    assert done.types == ["init", "step", "step", "finish"]
    assert done.step("main", 1)["output"] == {"result": 4}
    assert done.step("main", 1)["next"] is None  # nothing follows a return


async def test_return_inside_a_branch_ends_the_whole_workflow(mint):
    spec = task(
        {"if": "$ True", "then": [{"return": "$ 'early'"}, {"evaluate": {"never": "$ 1"}}]},
        {"evaluate": {"never": "$ 2"}},
    )
    done = await mint.succeed(spec)
    assert done.output == "early"
    assert done.outputs("main[0].then") == ["early"]
    assert [t["current"]["step"] for t in done.at("main")] == [0]  # main[1] never ran
    assert done.step("main", 0)["output"] == "early"


async def test_return_in_a_yielded_workflow_ends_only_that_workflow(mint):
    spec = task(
        {"workflow": "helper"},
        {"evaluate": {"after": "$ _"}},
        helper=[{"return": "$ 'from helper'"}, {"evaluate": {"never": "$ 1"}}],
    )
    done = await mint.succeed(spec)
    assert done.output == {"after": "from helper"}
    assert done.types == ["init", "init_branch", "step", "finish_branch", "step", "step", "finish"]


async def test_a_finish_is_recorded_at_the_last_step_that_ran_as_on_julep(mint):
    spec = task(
        {"workflow": "helper"},
        {"evaluate": {"b": "$ 2"}},
        {"evaluate": {"c": "$ 3"}},
        helper=[{"evaluate": {"h": "$ 1"}}, {"return": "$ 'done'"}, {"evaluate": {"never": "$ 1"}}],
    )
    done = await mint.succeed(spec)
    (finish,) = done.of_type("finish")
    (branch,) = done.of_type("finish_branch")
    assert (finish["current"]["workflow"], finish["current"]["step"]) == ("main", 2)  # no main[3] in 3 steps
    assert (branch["current"]["workflow"], branch["current"]["step"]) == ("helper", 1)  # its return


# error -----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(
            task(
                {"evaluate": {"x": '_["x"]'}}, {"error": 'bad value {{_["x"]}}'}, {"evaluate": {"n": '"ran"'}}
            ),
            id="seed",
        ),
        pytest.param(
            task({"evaluate": {"x": "$ _.x"}}, {"error": "bad value {{_.x}}"}, {"evaluate": {"n": "ran"}}),
            id="dollar",
        ),
    ],
)
async def test_error_fails_the_execution_with_its_rendered_message(mint, spec):
    done = await mint.fail(spec, {"x": 7})
    assert done.error == "TaskError: bad value 7"
    assert done.types == ["init", "step", "error"]
    assert done.failure == "TaskError: bad value 7"  # the workflow fails too (the Temporal UI shows it)


async def test_an_error_message_with_unstorable_text_is_recorded_escaped(mint):
    done = await mint.fail(task({"error": "$ 'bad \\x00 value'"}))
    assert done.error == "TaskError: bad \\x00 value"


# a step's result is measured as it will be written ---------------------------------------------------------

KB_500 = {"evaluate": {"s": "$ 'm' * 500_000"}}  # `_.s` in the next step: 500 KB, 62,500 elements as text
MANY_KEYS = {f"k{i}": "$ _.s" for i in range(20)}


@pytest.mark.parametrize(
    "result",
    [
        pytest.param({"x": "$ [_.s] * 200"}, id="list-repeat"),  # 100 MB written, for 29 units before
        pytest.param(MANY_KEYS, id="keys-the-same-value"),
        pytest.param({"x": '$ {"k%d" % i: _.s for i in range(2000)}'}, id="comprehension"),
        pytest.param({"x": "$ [[_.s] * 5] * 5"}, id="nested-repeat"),
        pytest.param({"x": "$ [[_] * 5] * 5"}, id="nested-repeat-of-a-dict"),
        pytest.param({f"k{i}": "{{ _.s }}" for i in range(20)}, id="template-repeat"),
        pytest.param({"x": "$ [_.s + '!'] * 20"}, id="new-text-repeat"),
    ],
)
async def test_a_result_that_repeats_a_big_value_past_the_limit_fails_its_step(mint, result):
    done = await mint.fail(task(KB_500, {"evaluate": result}))
    assert "LimitExceeded" in done.error and "1000000 elements" in done.error, done.error
    assert done.types == ["init", "step", "error"]
