"""What keeps a pure step cheap (bench/pure_steps.py measures it): work done once that would otherwise be
done for every step, or for every step of a task each time an execution starts."""

from __future__ import annotations

import copy

from expressions.budget import Budget, active_budget, charging
from workflows.dialect import read_value
from workflows.language.task import parse_task


def test_a_task_document_is_parsed_once_per_worker():
    document = {"name": "t", "main": [{"evaluate": {"i": "$ 1"}}]}
    first = parse_task(document)
    assert parse_task(copy.deepcopy(document)) is first  # the same text: the same parsed task
    changed = parse_task({**document, "main": [{"evaluate": {"i": "$ 2"}}]})
    assert changed is not first and changed.workflows["main"][0].evaluate == {"i": "$ 2"}


def test_a_value_string_is_read_once():
    for raw, dialect in (("plain text", "dollar"), ('_["a"] + 1', "seed"), ("$ _.a", "dollar")):
        assert read_value(raw, dialect) is read_value(raw, dialect)


def test_nested_charging_blocks_restore_the_active_budget_and_close_the_cpu_count():
    outer, inner = Budget(), Budget()
    with charging(outer):
        with charging(outer):
            assert active_budget() is outer
        with charging(inner):
            assert active_budget() is inner
        assert active_budget() is outer
    assert active_budget() is None
    assert outer._cpu_since is None and inner._cpu_since is None  # no evaluation left running
