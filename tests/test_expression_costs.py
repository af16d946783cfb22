"""What expressions over big values cost: reading, testing membership and passing a value
through cost what the operation costs, whatever the value's size; only work that walks or copies is charged
by size."""

import copy

import pytest

from expressions.parsing import ExpressionError
from workflows.values import ValueEvaluator


def api_answer(items: int) -> dict:
    """What an api_call step outputs for a JSON body of `items` records (5 MB at 40,000)."""
    records = [{"id": i, "name": f"item {i}", "tags": ["a", "b"], "text": "x" * 80} for i in range(items)]
    return {"status_code": 200, "headers": {"content-type": "application/json"}, "json": {"items": records}}


SMALL, BIG = api_answer(10), api_answer(40_000)


def units(source: str, value: dict) -> tuple[object, int]:
    evaluator = ValueEvaluator("dollar")
    result = evaluator.value(source, {"_": value})
    return result, evaluator.budget.since_yield


@pytest.mark.parametrize(
    "source",
    [
        "$ 'json' in _",
        "$ 'nope' not in _.json",
        "$ _.json.items",
        "$ _['json']['items'][-1]",
        "$ len(_.json.items)",
        "$ _ != None and _ != {}",
        "$ _.json.get('items') is not None",
        "$ [r['id'] for r in _.json.items[:3]]",
    ],
)
def test_reading_a_big_value_costs_the_same_as_a_small_one(source):
    small, big = units(source, SMALL), units(source, BIG)
    assert small[1] == big[1] < 50, (small[1], big[1])


def test_a_value_read_out_of_the_input_is_passed_on_not_copied():
    result, _ = units("$ {'items': _.json.items, 'first': [r for r in _.json.items[:2]]}", BIG)
    assert result["items"] is BIG["json"]["items"]  # type: ignore[index]
    assert result["first"][0] is BIG["json"]["items"][0]  # type: ignore[index]


def test_placing_a_big_value_in_a_new_one_pays_only_a_check_of_its_nesting():
    _, spent = units("$ [_.json.items]", BIG)
    assert 10_000 < spent < 60_000  # a walk at C speed; copying it would be over the step's budget


def test_a_membership_test_on_a_list_is_charged_by_its_length():
    few, many = units("$ 'x' in _.json.items", SMALL)[1], units("$ 'x' in _.json.items", BIG)[1]
    assert many > few + 2_000


def test_comparing_two_big_values_walks_them_and_is_charged():
    with pytest.raises(ExpressionError, match="operations"):
        ValueEvaluator("dollar").value("$ _ == twin", {"_": BIG, "twin": copy.deepcopy(BIG)})
    assert units("$ _ == _", SMALL)[0] is True


def test_nesting_is_still_bounded_when_a_value_is_passed_on():
    deep: list = []
    for _ in range(200):
        deep = [deep]
    with pytest.raises(ExpressionError, match="nested"):
        ValueEvaluator("dollar").value("$ {'a': _}", {"_": deep})
    assert ValueEvaluator("dollar").value("$ _", {"_": deep}) is deep


KB_500 = "m" * 500_000  # 62,500 elements as text


@pytest.mark.parametrize(
    "raw",
    [
        "$ [_] * 200",
        {f"k{i}": "$ _" for i in range(20)},
        '$ {"k%d" % i: _ for i in range(2000)}',
        "$ [[_] * 5] * 5",
        {f"k{i}": "{{ _ }}" for i in range(20)},
        "$ [{'a': _.json.items}] * 2",
    ],
)
def test_a_result_counts_a_repeated_value_each_time(raw):
    value = {"json": {"items": BIG["json"]["items"]}} if "json" in str(raw) else KB_500
    with pytest.raises(ExpressionError, match="LimitExceeded"):
        ValueEvaluator("dollar").value(raw, {"_": value})


@pytest.mark.parametrize(
    "raw",
    ["$ [_] * 15", {f"k{i}": "$ _" for i in range(15)}, "$ [[_] * 5] * 3", {"a": "$ _", "b": "{{ _ }}"}],
)
def test_a_result_just_under_the_limit_passes_and_pays_for_its_repeats(raw):
    evaluator = ValueEvaluator("dollar")
    result = evaluator.value(raw, {"_": KB_500})
    assert str(result).count(KB_500) == (2 if "b" in raw else 15)
    assert evaluator.budget.since_yield < 120_000


def _nested(levels: int, text: str) -> object:
    value: object = text
    for _ in range(levels):
        value = {"x": value}
    return value


@pytest.mark.parametrize(
    "raw",
    [
        {f"k{i}": "$ _" + ".x" * i for i in range(100)},  # _, _.x, _.x.x, ...: one text written 100 times
        "$ [_, _.x, _.x.x, _.x.x.x, _.x.x.x.x, _.x.x.x.x.x, _.x.x.x.x.x.x, _.x.x.x.x.x.x.x, _.x.x.x.x.x.x.x.x]",
    ],
)
def test_the_parts_of_one_held_value_count_each_time(raw):
    with pytest.raises(ExpressionError, match="LimitExceeded"):
        ValueEvaluator("dollar").value(raw, {"_": _nested(100, "n" * 900_000)})


def test_separate_held_values_are_each_passed_on_once():
    steps = [{"output": "c" * 5_000_000}, {"output": "d" * 5_000_000}]
    result = ValueEvaluator("dollar").value(
        {"a": "$ steps[0].output", "b": "$ steps[1].output"}, {"steps": steps}
    )
    assert result["a"] is steps[0]["output"] and result["b"] is steps[1]["output"]
