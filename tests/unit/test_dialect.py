"""How each string in a task is read (workflows/dialect.py) and evaluated (workflows/values.py): Python, a
template or text, string by string, in the seed and `$` dialects."""

from __future__ import annotations

import random

import pytest

from expressions.parsing import ExpressionError
from workflows.dialect import read_template, read_value
from workflows.validate import validate_task
from workflows.values import ValueEvaluator, detect_dialect


@pytest.mark.parametrize(
    ("raw", "dialect", "how"),
    [
        ("$ _.x + 1", "dollar", "python"),
        ("  $ _.x", "seed", "python"),  # stripped first, as Julep does
        ("hi {{ _.x }}", "dollar", "template"),
        ("hi {{ _.x }}", "seed", "template"),
        ("_", "dollar", "python"),
        ("_.name", "dollar", "python"),
        ("_[0]", "dollar", "python"),
        ("[1, 2]", "dollar", "python"),
        ("inputs[0]", "dollar", "python"),
        ("_[0].name", "dollar", "text"),  # `_[` without `]` last: Julep's text
        ("1 + 1", "dollar", "text"),
        ("New York", "dollar", "text"),
        ("New York", "seed", "text"),
        ("string", "seed", "text"),  # a module's bare name is never a value
        ("follow-up", "seed", "text"),  # parses, but names unknown names
        ("24*3600", "seed", "python"),
        ('"Daily Motivation"', "seed", "python"),
        ('_["choices"][0].content', "seed", "python"),
        ("$_.x", "seed", "text"),  # `$` is Python only with a space after it
        ("$5", "dollar", "text"),
    ],
)
def test_each_string_in_a_value_field_is_read_on_its_own(raw, dialect, how):
    assert read_value(raw, dialect).how == how


@pytest.mark.parametrize(
    ("raw", "dialect", "noted"),
    [
        ("hello", "seed", True),  # read as text where the seed would have tried Python
        ("1 + 1", "dollar", True),  # text that the seed dialect would read as Python
        ("_.x", "dollar", True),  # Python by Julep's shapes, without `$ `
        ("$_.x", "dollar", True),  # a `$` without its space before Python
        ("$ _.x", "dollar", False),
        ("New York", "dollar", False),
    ],
)
def test_a_string_that_could_be_read_either_way_carries_a_note(raw, dialect, noted):
    assert bool(read_value(raw, dialect).note) == noted


def test_a_prompt_log_or_error_is_a_template_unless_it_starts_with_dollar_space():
    assert read_template("_.text").how == "template"
    assert read_template("$ _.text").how == "python"


def evaluator(dialect: str) -> ValueEvaluator:
    values = ValueEvaluator(dialect, random.Random(1))  # type: ignore[arg-type]
    values.budget.start_step(cpu_guard=False)
    return values


def test_a_value_field_evaluates_each_string_inside_mappings_and_lists():
    raw = {"a": "$ _.x + 1", "b": "text", "c": "hi {{ _.x }}", "d": ["$ _.x"], "e": 3}
    assert evaluator("dollar").value(raw, {"_": {"x": 1}}) == {
        "a": 2,
        "b": "text",
        "c": "hi 1",
        "d": [1],
        "e": 3,
    }


def test_the_seed_dialect_evaluates_bare_expressions_and_keeps_words():
    raw = {"a": '_["x"] + 1', "b": "New York", "c": "24*3600"}
    assert evaluator("seed").value(raw, {"_": {"x": 1}}) == {"a": 2, "b": "New York", "c": 86400}


def test_results_become_json_data():
    values = evaluator("dollar")
    assert values.expression("$ (1, 2)", {}) == [1, 2]
    assert values.expression("{'k': {3}}", {}) == {"k": [3]}


def test_dict_keys_read_as_attributes():
    assert evaluator("dollar").expression("_.name", {"_": {"name": "Ada"}}) == "Ada"


def test_an_expression_error_names_the_problem():
    with pytest.raises(ExpressionError, match="ZeroDivisionError"):
        evaluator("dollar").expression("1 // 0", {})


def test_work_past_a_steps_budget_fails_the_expression():
    with pytest.raises(ExpressionError, match="at most 120000 operations"):
        evaluator("dollar").expression("[sorted(range(1000)) for x in range(1000)]", {})


def test_the_dialect_is_dollar_if_any_step_nested_or_not_has_a_dollar_string():
    nested = validate_task({"name": "t", "main": [{"if": "True", "then": {"evaluate": {"x": "$ 1"}}}]})
    plain = validate_task({"name": "t", "main": [{"if": "True", "then": {"evaluate": {"x": "1"}}}]})
    assert detect_dialect(nested.spec.workflows) == "dollar"
    assert detect_dialect(plain.spec.workflows) == "seed"
