"""What creating a task refuses (workflows/validate.py): every problem at once, each with the path where it is;
and what it accepts with a warning. The API answers 422 with exactly these problems (api/routes/tasks.py)."""

from __future__ import annotations

import pytest

from workflows.validate import TaskInvalid, TaskLimits, validate_task


def problems(document: dict, agent_tools: frozenset[str] = frozenset(), **limits) -> list[tuple[str, str]]:
    with pytest.raises(TaskInvalid) as refused:
        validate_task(document, agent_tools, TaskLimits(**limits))
    return [(p.path, p.message) for p in refused.value.problems]


def main(*steps: dict, **extra) -> dict:
    return {"name": "t", "main": list(steps), **extra}


OK = {"evaluate": {"x": "$ 1"}}


def test_a_task_needs_main():
    assert problems({"name": "t"}) == [
        ("main", "Value error, a task needs a `main` workflow (a list of steps)")
    ]


def test_a_task_must_be_a_mapping():
    assert problems(["main"]) == [("", "a task must be a mapping with at least `name` and `main`")]  # type: ignore[arg-type]


def test_a_mapping_that_is_no_step_kind_is_refused_listing_the_kinds():
    ((path, message),) = problems(main({"nope": 1}))
    assert path == "main[0]" and message.startswith(
        "not a step: a step is a mapping with one of the keys evaluate"
    )


def test_an_expression_that_does_not_parse_is_refused_at_its_path():
    assert problems(main({"evaluate": {"x": "$ _.a +"}})) == [
        ("main[0].evaluate.x", "syntax error in expression '_.a +': invalid syntax")
    ]


def test_an_unknown_name_in_a_nested_step_is_refused_at_its_nested_path():
    spec = main({"if": "$ True", "then": {"evaluate": {"x": "$ nope(1)"}}})
    assert problems(spec) == [("main[0].then[0].evaluate.x", "unknown name 'nope'")]


def test_an_unknown_name_in_a_reduce_is_refused_but_results_is_known():
    spec = main({"over": "$ _", "map": OK, "reduce": "$ results + bogus"})
    assert problems(spec) == [("main[0].reduce", "unknown name 'bogus'")]


def test_every_problem_is_listed_at_once():
    spec = main({"tool": "ghost"}, {"workflow": "elsewhere"}, {"evaluate": {"x": "$ ("}})
    assert [path for path, _ in problems(spec)] == ["main[0].tool", "main[1].workflow", "main[2].evaluate.x"]


def test_an_unknown_tool_is_refused_naming_the_known_ones():
    assert problems(main({"tool": "ghost"}), frozenset({"lookup"})) == [
        ("main[0].tool", "unknown tool 'ghost' (tools: lookup)")
    ]


def test_an_agents_tool_may_be_called_unless_the_task_does_not_inherit_tools():
    validate_task(main({"tool": "lookup"}), frozenset({"lookup"}))
    assert problems(main({"tool": "lookup"}, inherit_tools=False), frozenset({"lookup"})) == [
        ("main[0].tool", "unknown tool 'lookup' (tools: none)")
    ]


def test_a_prompt_offering_an_unknown_tool_is_refused():
    assert problems(main({"prompt": "hi", "tools": ["ghost"]})) == [
        ("main[0].tools[0]", "unknown tool 'ghost' (tools: none)")
    ]


def test_a_yield_to_an_unknown_workflow_is_refused():
    assert problems(main({"workflow": "ghost"})) == [
        ("main[0].workflow", "unknown workflow 'ghost' (workflows: main)")
    ]


def test_a_label_used_twice_is_refused():
    spec = main({**OK, "label": "a"}, {**OK, "label": "a"})
    assert problems(spec) == [("main[1].label", "label 'a' is already used at main[0]")]


def test_a_tool_defined_twice_is_refused():
    tools = [{"name": "a", "type": "function"}, {"name": "a", "type": "function"}]
    assert problems(main(OK, tools=tools)) == [("tools[1].name", "tool 'a' is already defined at tools[0]")]


def test_a_second_step_kind_in_one_step_is_refused_as_a_missing_dash():
    ((path, message),) = problems(main({**OK, "log": "x"}))
    assert path == "main[0].log" and "is a `-` missing before it" in message


def test_then_beside_a_step_that_has_no_then_is_refused():
    ((path, _),) = problems(main({**OK, "then": OK}))
    assert path == "main[0].then"


def test_a_step_field_of_the_wrong_shape_is_refused_at_the_field():
    assert problems(main({"wait_for_input": {"info": "x", "on_timeout": "later"}})) == [
        ("main[0].wait_for_input.on_timeout", "Input should be 'fail' or 'continue'")
    ]
    ((path, _),) = problems(main({"sleep": True}))
    assert path == "main[0].sleep"


def test_an_api_call_timeout_over_the_limit_is_refused():
    tools = [{"name": "f", "type": "api_call", "api_call": {"url": "https://x.example", "timeout": 1000}}]
    ((path, message),) = problems(main(OK, tools=tools))
    assert path == "tools[0].api_call.timeout" and "at most 300 seconds" in message


def test_a_literal_argument_timeout_over_the_limit_is_refused_at_creation():
    tools = [{"name": "f", "type": "api_call", "api_call": {"url": "https://x.example"}}]
    ((path, _),) = problems(main({"tool": "f", "arguments": {"timeout": 1000}}, tools=tools))
    assert path == "main[0].arguments.timeout"


def test_a_bad_input_schema_is_refused_at_its_path():
    assert problems(main(OK, input_schema={"type": "nonsense"})) == [
        ("input_schema.type", "'nonsense' is not valid under any of the given schemas")
    ]


def test_a_julep_function_mint_does_not_have_is_refused_by_name_with_the_reason():
    ((path, message),) = problems(main({"evaluate": {"x": "$ nlp.x"}}))
    assert path == "main[0].evaluate.x" and message.startswith("nlp (from Julep v1) is not available in Mint")


def test_more_steps_than_the_limit_are_refused_naming_the_first_past_it():
    assert problems(main(OK, OK, OK), max_steps=2) == [
        ("main[2]", "the task has 3 steps (nested ones included); the step limit is 2 (MINT_MAX_STEPS)")
    ]


def test_an_expression_longer_than_the_limit_is_refused():
    ((path, message),) = problems(main({"evaluate": {"x": "$ " + "1+" * 30 + "1"}}), max_expression_length=20)
    assert path == "main[0].evaluate.x" and "20" in message


def test_a_task_with_no_dollar_string_is_in_the_seed_dialect_and_warns_how_it_read_a_word():
    valid = validate_task(main({"evaluate": {"x": "hello"}}))
    assert valid.dialect == "seed"
    assert [(w.path, w.message) for w in valid.warnings] == [
        ("main[0].evaluate.x", "read as text, not Python (unknown name 'hello')")
    ]


def test_one_dollar_string_anywhere_puts_the_task_in_the_dollar_dialect():
    spec = main(
        {"if": "True", "then": {"evaluate": {"size": "big"}}, "else": {"evaluate": {"n": "$ str(_.n)"}}}
    )
    assert validate_task(spec).dialect == "dollar"


def test_an_unknown_key_julep_ignored_is_accepted_with_a_warning():
    valid = validate_task(main({"evaluate": {"x": "$ 1"}, "response_format": {"type": "json"}}))
    assert [(w.path, w.message) for w in valid.warnings] == [
        (
            "main[0].response_format",
            "ignored, as Julep v1 ignored it: `evaluate` steps have no `response_format`",
        )
    ]
    assert "response_format" not in valid.document["main"][0]


def test_the_stored_document_has_then_else_and_do_as_lists():
    valid = validate_task(main({"if": "$ True", "then": OK}))
    assert valid.document["main"] == [{"if": "$ True", "then": [{"evaluate": {"x": "$ 1"}}]}]


def test_a_tool_or_kind_named_by_something_not_text_is_refused_not_crashed_on():
    assert problems(main({"prompt": "hi", "tools": [{"name": ["x"]}]})) == [
        ("main[0].tools[0]", "unknown tool ['x'] (tools: none)")
    ]
    ((path, message),) = problems(main({"kind_": ["x"], "evaluate": {"a": "1"}}))
    assert path == "main[0].kind_"
