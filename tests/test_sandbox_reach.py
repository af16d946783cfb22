"""What expressions and templates can reach, enumerated: every callable is charged for its work or is on an
explicit list of constant-cost entries, so nothing added later can slip past the work budget unnoticed.

Also the last line of defence (the CPU guard), the regex cache's bound, and that every error an expression
can raise comes back as an ExpressionError (a failed step), never as something else.
"""

import gc
import random
from datetime import UTC, date, datetime, timedelta
from datetime import time as dtime
from types import SimpleNamespace

import jinja2
import pytest
import re2
from markupsafe import Markup

from expressions import budget as budget_module
from expressions import csv_rows, regex
from expressions.budget import CLOCK_EVERY, Budget, LimitExceeded, charging
from expressions.data import OrderedSet
from expressions.evaluator import Evaluator
from expressions.functions import CONSTANT_COST, build_functions, is_charged
from expressions.methods import DATA_ATTRIBUTES, METHODS, Method, constant
from expressions.parsing import ExpressionError
from expressions.shims import SafeNamespace, build_modules
from expressions.template_filters import (
    BOUNDED_FILTERS,
    CHECKED_FILTERS,
    COMPARING_FILTERS,
    COMPARING_TESTS,
    CONSTANT_TESTS,
    ITERATING_FILTERS,
    NUMBER_TESTS,
    REMOVED_FILTERS,
    REPLACED_FILTERS,
    TEXT_FILTERS,
    TEXT_TESTS,
)
from expressions.templates import ENVIRONMENT
from workflows.values import ValueEvaluator

# Methods whose rule is `constant` (their work does not grow with the object): reviewed one by one. A method
# added with that rule must be added here too, deliberately.
CONSTANT_METHODS = {
    (datetime, "isoformat"),
    (datetime, "weekday"),
    (datetime, "isoweekday"),
    (datetime, "timestamp"),
    (datetime, "date"),
    (date, "isoformat"),
    (dtime, "isoformat"),
    (date, "weekday"),
    (date, "isoweekday"),
    (timedelta, "total_seconds"),
    (type(re2.search("a", "a")), "start"),
    (type(re2.search("a", "a")), "end"),
    (type(re2.search("a", "a")), "span"),
}
# What an attribute may give besides a Method: plain data (a datetime's tzinfo is a timezone, which nothing
# can read further or print).
PLAIN = (str, int, float, bool, type(None), datetime, date, dtime, timedelta, list, tuple, dict, type(UTC))


def _samples() -> list:
    """One value of every kind an expression or a template can hold."""
    now = datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)
    budget = Budget()
    functions = build_functions(random.Random(1), budget)
    modules = build_modules(random.Random(1), lambda: now, budget)
    return [
        "text",
        b"bytes",
        7,
        2**100,
        1.5,
        True,
        None,
        [1, 2],
        (1, 2),
        {"k": 1},
        OrderedSet([1]),
        range(3),
        now,
        now.replace(tzinfo=None),
        now.date(),
        now.timetz(),
        timedelta(seconds=5),
        UTC,
        re2.search("(a)(?P<n>b)", "xab"),
        Method("text", str.upper, constant),
        functions["len"],
        functions["str"],
        modules["json"],
        modules["json"].get("dumps"),
        Markup("<b>"),
        csv_rows.Writer(""),
        csv_rows.DictWriter("", ["a"]),
    ]


def _names(value) -> set[str]:
    allowed = set(METHODS.get(type(value), {})) | set(DATA_ATTRIBUTES.get(type(value), ()))
    return {n for n in dir(value) if not n.startswith("_")} | allowed


def _expression_attributes():
    for value in _samples():
        for name in sorted(_names(value)):
            yield pytest.param(value, name, id=f"{type(value).__name__}.{name}")


@pytest.mark.parametrize("value, name", list(_expression_attributes()))
def test_an_expression_reaches_only_data_or_charged_methods(value, name):
    evaluator = Evaluator(random.Random(1))
    try:
        reached = evaluator.evaluate("v." + name, {"v": value})
    except ExpressionError:
        return
    if isinstance(value, SafeNamespace):
        assert is_charged(reached) or not callable(reached), name
    else:
        assert isinstance(reached, Method) or type(reached) in PLAIN, (name, type(reached))


@pytest.mark.parametrize("value, name", list(_expression_attributes()))
def test_a_template_reaches_only_data_or_charged_methods(value, name):
    for lookup in (ENVIRONMENT.getattr, ENVIRONMENT.getitem):
        try:
            reached = lookup(value, name)
        except AttributeError:  # a shim's missing member
            continue
        if isinstance(reached, jinja2.Undefined):
            continue
        if isinstance(value, SafeNamespace):
            assert is_charged(reached) or not callable(reached), name
        else:
            assert isinstance(reached, Method) or type(reached) in PLAIN, (name, type(reached))


def test_jinja_runtime_objects_offer_only_their_data():
    template = ENVIRONMENT.from_string(
        "{% for g in [{'a': 1}] | groupby('a') %}{{ loop.index }} {{ loop.cycle('x', 'y') }} {{ g.grouper }}"
        "{{ g.list }}{{ loop.changed(g) }}{% endfor %}"
    )
    with charging(Budget()):
        assert template.render() == "1 x 1[{'a': 1}]True"
    for attribute in ("_iterator", "__class__", "_after"):
        source = "{% for i in [1] %}{{ loop." + attribute + " }}{% endfor %}"
        refused = (jinja2.exceptions.UndefinedError, jinja2.exceptions.SecurityError)
        with pytest.raises(refused), charging(Budget()):
            ENVIRONMENT.from_string(source).render()


def test_every_method_charges_on_every_call():
    """Calling a method (as map or sorted would, again and again) charges each time, before it runs."""
    for value in _samples():
        for name in METHODS.get(type(value), {}):
            budget = Budget()
            method = Evaluator(random.Random(1), budget=budget).evaluate("v." + name, {"v": value})
            for _ in range(2):
                before = budget.left
                with charging(budget):
                    try:
                        method()
                    except (TypeError, ValueError, IndexError):
                        pass  # the call was refused by Python after the charge
                assert budget.left < before, name


def test_constant_cost_methods_are_the_reviewed_ones():
    constant_methods = {(kind, name) for kind, table in METHODS.items() for name, (_, rule) in table.items()
                        if rule is constant}  # fmt: skip
    assert constant_methods == CONSTANT_METHODS


def test_data_attributes_are_never_callable():
    for value in _samples():
        for name in DATA_ATTRIBUTES.get(type(value), ()):
            assert not callable(getattr(value, name)), name


def test_every_function_is_charged_or_constant_cost():
    functions = build_functions(random.Random(1), Budget())
    for name, func in functions.items():
        assert is_charged(func) or func in CONSTANT_COST, name
    assert {name for name, func in functions.items() if func in CONSTANT_COST} == {"len", "bool"}


def _members(namespace: SafeNamespace, path: str):
    for name in namespace:
        member = namespace.get(name)
        if isinstance(member, SafeNamespace):
            yield from _members(member, f"{path}.{name}")
        else:
            yield f"{path}.{name}", member


def test_every_module_member_is_charged_or_data():
    modules = build_modules(random.Random(1), datetime.now, Budget())
    members = [m for name, module in modules.items() for m in _members(module, name)]
    assert len(members) > 60
    for path, member in members:
        if callable(member):
            assert is_charged(member), path
        else:
            assert type(member) in (str, int, float, type(UTC)), path


def test_every_function_charges_before_it_runs():
    """Even a call that then fails has paid: a function passed to map cannot run free."""
    budget = Budget()
    functions = build_functions(random.Random(1), budget)
    modules = build_modules(random.Random(1), datetime.now, budget)
    callables = [(n, f) for n, f in functions.items() if f not in CONSTANT_COST]
    callables += [
        (p, m) for name, module in modules.items() for p, m in _members(module, name) if callable(m)
    ]
    for path, func in callables:
        before = budget.left
        with charging(budget):
            try:
                func(object())
            except Exception:  # noqa: BLE001, S110 - only the charge matters here
                pass
        assert budget.left < before, path


def test_every_jinja_filter_and_test_has_a_reviewed_cost():
    reviewed = (
        set(TEXT_FILTERS)
        | set(ITERATING_FILTERS)
        | COMPARING_FILTERS
        | BOUNDED_FILTERS
        | set(CHECKED_FILTERS)
        | set(REPLACED_FILTERS)
        | REMOVED_FILTERS
    )
    assert set(jinja2.filters.FILTERS) <= reviewed
    assert set(ENVIRONMENT.filters) == set(jinja2.filters.FILTERS) - REMOVED_FILTERS
    assert all(is_charged(f) for f in ENVIRONMENT.filters.values())
    assert set(jinja2.tests.TESTS) <= COMPARING_TESTS | TEXT_TESTS | NUMBER_TESTS | CONSTANT_TESTS
    assert all(is_charged(t) for t in ENVIRONMENT.tests.values())


def test_jinja_globals_are_charged_or_bounded():
    helpers = {"mint_loop", "mint_concat", "mint_compare", "mint_slice", "mint_dict"}
    assert set(ENVIRONMENT.globals) == {"range", "dict"} | helpers
    assert ENVIRONMENT.globals["range"] is jinja2.sandbox.safe_range  # a lazy range of at most MAX_RANGE


# The regex engine -----------------------------------------------------------------------------------------


def test_a_regex_compiles_within_its_caps_and_is_charged_once_per_step():
    spent = []
    for warm in (False, True):
        if not warm:
            regex.CACHE = regex._Cache()
        evaluator = ValueEvaluator("dollar")
        evaluator.value("$ [re.search('\\\\p{L}{4}', w) for w in ['abcd'] * 50]", {})
        spent.append(evaluator.budget.since_yield)
    assert (
        spent[0] == spent[1]
    )  # a warm cache is faster, never cheaper: replays charge what the first run did
    with pytest.raises(ExpressionError, match="instructions"):
        ValueEvaluator("dollar").value("$ re.search('(?i)\\\\p{L}{40}', 'a')", {})


def test_the_regex_cache_is_bounded_by_memory():
    cache = regex._Cache(limit=10 * regex.MAX_MEM)
    for i in range(40):
        cache.get(f"a{i}+b")
    assert len(cache) <= 10 and cache.used <= cache.limit
    assert re2._Regexp._make.cache_info().currsize == 0  # google-re2's own memo is not kept


# The CPU guard --------------------------------------------------------------------------------------------

HEAVY = "$ [str(i) for i in range(9000)]"


def test_the_cpu_guard_fails_a_step_its_units_would_allow():
    evaluator = ValueEvaluator("dollar")
    evaluator.budget.cpu_seconds = 1e-6  # stands in for work that was charged too little
    evaluator.budget.start_step()
    with pytest.raises(ExpressionError, match="CPU"):
        evaluator.value(HEAVY, {})


def test_the_cpu_guard_is_off_for_a_replayed_step():
    evaluator = ValueEvaluator("dollar")
    evaluator.budget.cpu_seconds = 1e-6
    evaluator.budget.start_step(cpu_guard=False)
    assert len(evaluator.value(HEAVY, {})) == 9000


def test_the_cpu_guard_leaves_out_garbage_collection(monkeypatch):
    # A full collection of a worker's heap runs on whichever thread allocates, and may take most of a second:
    # the process's work, which must not fail whichever step happened to trigger it. The thread's clock is
    # faked, so the test is arithmetic, not timing; the collector's own runs are held off meanwhile.
    assert budget_module._time_collections in gc.callbacks
    clock = {"now": 0.0}
    monkeypatch.setattr(budget_module, "time", SimpleNamespace(thread_time=lambda: clock["now"]))
    budget = Budget(cpu_seconds=0.5)
    gc.disable()
    try:
        with charging(budget):
            clock["now"] += 0.1  # the step's own work
            budget_module._time_collections("start", {})
            clock["now"] += 0.9  # a collection that this step's allocation triggered
            budget_module._time_collections("stop", {})
            budget.charge(CLOCK_EVERY * 2)  # the guard reads the clock
        assert budget.cpu_used == pytest.approx(0.1)
        budget.start_step()
        with charging(budget), pytest.raises(LimitExceeded, match="CPU"):
            clock["now"] += 0.6  # the step's own work, past the limit
            budget.charge(CLOCK_EVERY * 2)
    finally:
        gc.enable()


# Errors ---------------------------------------------------------------------------------------------------


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    "source, names, message",
    [
        ("$ math.exp(1000)", {}, "OverflowError"),
        ("$ 2.0 ** 100000", {}, "OverflowError"),
        ("$ datetime.timedelta(days=10 ** 10)", {}, "OverflowError"),
        ("$ 1 / 0", {}, "ZeroDivisionError"),
        ("$ urllib.parse.quote('\\ud800')", {}, "UnicodeEncodeError"),
        ("$ load_json('[1')", {}, "JSONDecodeError"),
        ("$ [_]", {"_": _nested(3000)}, "nested"),
        ("$ {'a': _}", {"_": _nested(200)}, "nested"),
        ("$ int('x')", {}, "ValueError"),
        ("$ x + 1", {"x": "a"}, "TypeError"),
        ("{{ 1 / 0 }}", {}, "ZeroDivisionError"),
        ("{{ urllib.parse.quote('\\ud800') }}", {}, "UnicodeEncodeError"),
        ("{{ math.exp(1000) }}", {}, "OverflowError"),
    ],
)
def test_every_error_an_expression_raises_is_an_expression_error(source, names, message):
    evaluator = ValueEvaluator("dollar")
    with pytest.raises(ExpressionError, match=message):
        evaluator.template(source, names) if source.startswith("{{") else evaluator.value(source, names)
