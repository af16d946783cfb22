"""map_reduce's reduce: Julep's `results + [x]` runs as an append, in linear time, with
the value the expression gives when evaluated as written."""

from __future__ import annotations

import random
from typing import Any

import pytest

from expressions.parsing import ExpressionError
from workflows.reduce import appended, fold, reduce_results
from workflows.values import ValueEvaluator


def evaluator(per_step: int | None = None) -> ValueEvaluator:
    values = ValueEvaluator("dollar", random.Random(7))
    if per_step is not None:
        values.budget.per_step = per_step
    values.budget.start_step(cpu_guard=False)
    return values


def unbounded() -> ValueEvaluator:
    """Room for the quadratic evaluation as written, to compare values with."""
    return evaluator(per_step=10**12)


def results(count: int) -> list[Any]:
    return [{"x": i, "doc": f"k: {i}", "pair": [i, i / 2]} for i in range(count)]


@pytest.mark.parametrize(
    ("source", "items"),
    [
        ("$ results + [_]", "[_]"),
        ("results + [_]", "[_]"),
        ("$   results+[ _ ]  ", "[_]"),
        ("$ results + [_['x']]", "[_['x']]"),
        ("results + [\n  load_yaml(_['doc'])\n]", "[load_yaml(_['doc'])]"),
        ("$ results + [_.x, _.pair]", "[_.x, _.pair]"),
        ("$ results + [y for y in _.pair]", "[y for y in _.pair]"),
    ],
)
def test_appending_reduces_are_recognised(source, items):
    assert appended(source) == items


@pytest.mark.parametrize(
    "source",
    [
        "$ results + _",  # a number, or a list of unknown length: the sum as written
        "$ [_] + results",  # prepends
        "$ results + [len(results)]",  # reads the accumulator
        "$ results + list(_)",  # not a list display
        "$ results * 2 + [_]",
        "$ results + [_] + [1]",
        "$ other + [_]",
    ],
)
def test_other_reduces_are_evaluated_as_written(source):
    assert appended(source) is None


@pytest.mark.parametrize(
    "source",
    [
        None,
        "$ results + [_]",
        "$ results + [_['x']]",
        "$ results + [_.x, _.pair]",
        "$ results + [{'k': {1: _.x}, 'n': _.x / 3}]",
        "$ results + [y * 2 for y in _.pair]",
        "results + [load_yaml(_['doc'])]",
    ],
)
@pytest.mark.parametrize("initial", [[], [1, {"a": [2]}], [float("nan")]])
def test_an_append_gives_the_value_of_the_sum_as_written(source, initial):
    written = "$ results + [_]" if source is None else source
    expected = fold(unbounded(), written, initial, results(300), {})
    assert reduce_results(unbounded(), source, initial, results(300), {}) == expected


@pytest.mark.parametrize("source", ["$ results + [_['x']]", "$ results + [_.pair[1]]"])
def test_an_append_costs_the_same_per_item_for_1000_and_10000_items(source):
    spent = {}
    for count in (1_000, 10_000):
        values = evaluator()
        reduce_results(values, source, [], results(count), {})
        spent[count] = values.budget.per_step - values.budget.left
    assert spent[10_000] == 10 * spent[1_000], spent
    assert spent[10_000] < values.budget.per_step  # within one step's budget


@pytest.mark.parametrize("source", [None, "$ results + [_]", "results + [_]"])
def test_julep_default_reduce_costs_nothing_per_item(source):
    values = evaluator()
    output = reduce_results(values, source, [-1], results(10_000), {})
    assert output == [-1, *results(10_000)]
    assert values.budget.per_step - values.budget.left < 100


def test_the_sum_as_written_overruns_the_budget_on_10000_items():
    """What the append avoids: each item copies the accumulator (the reason for this module)."""
    with pytest.raises(ExpressionError, match="at most 120000 operations"):
        fold(evaluator(), "$ results + [_['x']]", [], results(10_000), {})


@pytest.mark.parametrize(
    ("source", "initial"), [(None, 0), ("$ results + [_]", {"a": 1}), ("$ results + [_.x]", "ab")]
)
def test_an_initial_that_is_not_a_list_fails_as_the_sum_as_written_does(source, initial):
    written = "$ results + [_]" if source is None else source
    with pytest.raises(ExpressionError) as as_written:
        fold(unbounded(), written, initial, results(3), {})
    with pytest.raises(ExpressionError) as appending:
        reduce_results(unbounded(), source, initial, results(3), {})
    assert str(appending.value) == str(as_written.value)


def test_no_results_give_the_initial_value():
    assert reduce_results(evaluator(), "$ results + [_.x]", ["seed"], [], {}) == ["seed"]


def test_an_item_that_fails_names_the_reduce_as_written():
    with pytest.raises(ExpressionError, match=r"ZeroDivisionError: .* \(in 'results \+ \[1 // _\.x\]'\)$"):
        reduce_results(evaluator(), "$ results + [1 // _.x]", [], results(2), {})
