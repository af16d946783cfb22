"""How a raw value in a task becomes data: Python expressions, Jinja templates and text.

Which of the three a string is, `workflows.dialect` decides, string by string (Julep v1's rule, and the seed's
bare expressions in a task with no `$ `). Template fields (prompts, `log`, `error`) are Jinja in both dialects;
`$ expr` there is an expression too."""

from __future__ import annotations

import operator
import random as _random
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime, timedelta
from datetime import time as dtime
from itertools import compress, repeat
from typing import Any

from temporalio import workflow

from contracts.json import JsonObject
from expressions.budget import (
    CHARS_PER_UNIT,
    COPIES_PER_UNIT,
    MAX_ELEMENTS,
    SCANS_PER_UNIT,
    Budget,
    LimitExceeded,
    charging,
)
from expressions.data import NESTING_SCANS_PER_UNIT, OrderedSet, counted, nests_deeper
from expressions.evaluator import Evaluator
from expressions.methods import MATCH
from expressions.operators import safe_str
from expressions.parsing import MAX_EXPRESSION_LENGTH, ExpressionError, check_expression, reads_data
from expressions.templates import check_template, is_template, render_template
from workflows import language as lang
from workflows.dialect import (
    Dialect,
    has_dollar,
    iter_strings,
    python_source,
    read_template,
    read_value,
)

# The names an expression or template sees: `_`, `inputs`, `steps`, `state`... (the interpreter's), or a
# narrower scope (a tool's `arguments`); the values are whatever the expression may read.
Names = Mapping[str, object]
# A step result is measured as it will be written (see _Measured); a run recorded before it was replays unmeasured.
RESULTS_PATCH = "bounded-step-results"


class ValueEvaluator:
    """Evaluates expression fields and renders template fields for one execution (one per workflow run)."""

    def __init__(
        self,
        dialect: Dialect,
        rng: _random.Random | None = None,
        now: Callable[[], datetime] | None = None,
        null_text: str = "",  # what a template prints for a null (ExecutionParams.null_text)
        patched: Callable[[str], bool] = workflow.patched,  # workflows/patches.py Patches, in an execution
    ):
        self.dialect = dialect
        self.budget = Budget()
        self.expressions = Evaluator(rng, now, self.budget)
        self._helpers = {**self.expressions.functions, **self.expressions.modules}
        self._measures: bool | None = None  # RESULTS_PATCH, asked once per run (at its first result)
        self._null_text, self._patched = null_text, patched

    def _result(self) -> _Measured | None:
        """A new result's measure, or None in a run recorded before results were measured."""
        if self._measures is None:
            self._measures = not workflow.in_workflow() or self._patched(RESULTS_PATCH)
        return _Measured(self.budget) if self._measures else None

    def _render(self, raw: str, names: Names) -> str:
        return render_template(raw, {**self._helpers, **names}, self.budget, self._null_text)

    def expression(self, source: str, names: Names) -> Any:
        """Evaluate a field that is always Python (e.g. `if`, `over`, `reduce`), with or without a `$`."""
        return self._data(python_source(source), names, self._result())

    def _data(self, source: str, names: Names, result: _Measured | None) -> Any:
        # One block for the evaluation and the copy: printing a key charges too, and the copy counts as the
        # step's CPU (the evaluation's own block nests in it, reading no clock).
        with charging(self.budget):
            value = self.expressions.evaluate(source, names)
            if type(value) in _AS_IS and reads_data(source):
                # a part of data the execution already holds: no copy to make or pay for, unless it repeats
                return value if result is None else result.passed_on(value, self.expressions.roots)
            try:
                if result is None:
                    return to_data(value, self.budget, self.expressions.shared)
                return result.add(value, self.expressions.shared, self.expressions.roots)
            except LimitExceeded as exc:
                raise ExpressionError(f"LimitExceeded: {exc} (in {source!r})") from None

    def value(self, raw: Any, names: Names) -> Any:
        """Evaluate a value field (recursing into mappings and lists), each string read as its dialect says;
        the whole of it is one result, measured as one (and its CPU counted in one block)."""
        with charging(self.budget):
            return self._value(raw, names, self._result())

    def _value(self, raw: Any, names: Names, result: _Measured | None) -> Any:
        # By exact type first: a task's fields are JSON, and isinstance is slow in the workflow sandbox.
        kind: type | None = raw.__class__
        if kind is not str and kind is not dict and kind is not list:
            kinds = (str, dict, list)
            kind = next((k for k in kinds if isinstance(raw, k)), None)
        if kind is str:
            reading = read_value(raw, self.dialect)
            if reading.how == "python":
                return self._data(reading.source, names, result)
            if reading.how == "template":
                text = self._render(raw, names)
                return text if result is None else result.add(text, {}, {})
            return raw
        if kind is dict:
            return {key: self._value(item, names, result) for key, item in raw.items()}
        if kind is list:
            return [self._value(item, names, result) for item in raw]
        return raw

    def template(self, raw: str, names: Names) -> Any:
        """Render a template field; `$ expr` evaluates instead."""
        reading = read_template(raw)
        if reading.how == "python":
            return self._data(reading.source, names, self._result())
        return self._render(raw, names)  # MAX_STRING_LENGTH bounds it


_AS_IS = frozenset({type(None), bool, int, str, list, dict})
SLOW_UNITS = 3  # per element converted one by one
_SCALARS = frozenset({type(None), bool, int, str})


# Nesting a result may have: a step can nest a value one level deeper than the last, and every walk after
# this one has a limit (Python's stack for JSON, pydantic's 255 levels when the API serves a transition,
# which wraps the output in a few more).
MAX_RESULT_DEPTH = 128


def to_data(value: Any, budget: Budget | None = None, shared: Mapping[int, Any] | None = None) -> Any:
    """Turn an expression's result into JSON-ready data (tuples and sets become lists, dates ISO text),
    charging `budget` for the copy: collections of plain scalars are copied at C speed, anything else
    is converted element by element. Lists and dicts in `shared` (by id: data the execution already holds,
    see Evaluator.shared) are kept as they are, neither copied nor charged."""
    try:
        return _ToData(budget, shared or {}).convert(value)
    except RecursionError:
        raise ExpressionError(f"result is nested more than {MAX_RESULT_DEPTH} levels deep") from None


class _ToData:
    """One result's conversion: the elements it may still hold, and the budget it charges."""

    def __init__(self, budget: Budget | None, shared: Mapping[int, Any]):
        self.left = MAX_ELEMENTS
        self.budget = budget
        self.shared = shared

    def pay(self, elements: int, units: int) -> None:
        self.left -= elements
        if self.left < 0:
            raise ExpressionError(f"result is too large (over {MAX_ELEMENTS} elements)")
        if self.budget is not None:
            try:
                self.budget.charge(units)
            except LimitExceeded as exc:
                raise ExpressionError(f"LimitExceeded: {exc}") from None

    def convert(self, item: Any, depth: int = 0) -> Any:
        kind = type(item)
        if kind in _SCALARS:
            return item
        if depth > MAX_RESULT_DEPTH:
            raise ExpressionError(f"result is nested more than {MAX_RESULT_DEPTH} levels deep")
        if id(item) in self.shared:
            return self._shared(item, depth)
        if kind is float:
            return item if item == item and item not in (float("inf"), float("-inf")) else str(item)
        if kind is list or kind is tuple or kind is OrderedSet:
            return self._sequence(item, kind, depth)
        if isinstance(item, dict):
            return self._mapping(item, depth)
        return self._other(item, depth)

    def _shared(self, item: Any, depth: int) -> Any:
        if depth:  # placed in a new list or dict, so its own nesting counts from here
            deeper, scanned = nests_deeper(item, MAX_RESULT_DEPTH - depth + 1)
            self.pay(0, scanned // NESTING_SCANS_PER_UNIT)
            if deeper:
                raise ExpressionError(f"result is nested more than {MAX_RESULT_DEPTH} levels deep")
        return item

    def _sequence(self, item: Any, kind: type, depth: int) -> list[Any]:
        if kind is OrderedSet:
            self.pay(0, SLOW_UNITS)  # its iteration is Python code
        kinds = set(map(type, item))
        if kinds <= _SCALARS:
            self.pay(len(item) + 1, len(item) // COPIES_PER_UNIT)
            if str in kinds:
                self._texts(item, kinds)
            return list(item)
        self.pay(1, len(item) * SLOW_UNITS)
        return [self.convert(v, depth + 1) for v in item]

    def _mapping(self, item: dict[Any, Any], depth: int) -> JsonObject:
        kinds = set(map(type, item.values()))
        if set(map(type, item)) <= {str} and kinds <= _SCALARS:
            self.pay(2 * len(item) + 1, len(item) // COPIES_PER_UNIT)
            self._texts(item.keys(), {str})
            if str in kinds:
                self._texts(item.values(), kinds)
            return dict(item)
        self.pay(len(item) + 1, len(item) * SLOW_UNITS)
        return {k if isinstance(k, str) else safe_str(k): self.convert(v, depth + 1) for k, v in item.items()}

    def _texts(self, items: Any, kinds: set[type]) -> None:
        """Count the text of a collection's strings (_Measured does; this conversion, from before, not)."""

    def _other(self, item: Any, depth: int) -> Any:
        if isinstance(item, list | tuple | range):
            return self.convert(list(item), depth)
        if isinstance(item, datetime | date | dtime):
            return item.isoformat()
        if isinstance(item, timedelta):
            return item.total_seconds()
        if type(item) is MATCH:  # a regex match: the text it matched, copied out
            start, end = item.span()
            self.pay(1, (end - start) // CHARS_PER_UNIT)
            return item.group(0)
        for plain in (str, int):  # subclasses (an enum, Jinja's Markup) as the plain value
            if isinstance(item, plain):
                return plain(item)
        raise ExpressionError(f"an expression returned a {type(item).__name__}, which is not data")


TEXT_CHARS_PER_UNIT = 8 * SCANS_PER_UNIT  # text counts an element per 8 characters, written at C speed
HELD_TEXT = 4096  # a string shorter than this is counted without asking whether the execution holds it


class _Measured(_ToData):
    """One step result (every field of a value, an expression's result) measured as it will be written
    (JSON, to the transition and to Temporal), before it is: MAX_ELEMENTS in all, text counting an element
    per 8 characters as bounded_size counts it, and whatever appears more than once counting each time.

    Data the execution already holds (Evaluator.shared, a field that only reads it) is stored already, so
    the first appearance of each held value (`_`, a step's output: Evaluator.roots) is free; every other part
    of it, and every repeat, counts its whole size (counted, measured once per object: a repeat then costs
    O(1)), and the step pays for writing it. One part per held value, because parts nest: `_`, `_.x` and
    `_.x.x` are three objects holding the same text, and a result listing all three writes it three times."""

    def __init__(self, budget: Budget):
        super().__init__(budget, {})
        self.budget: Budget = budget
        self.seen: dict[int, list[Any]] = {}  # id -> [held object (kept alive), its size once measured]
        self.freed: set[int] = set()  # the held values (Evaluator.roots) one part of which went free
        self.roots: Mapping[int, int] = {}

    def pay(self, elements: int, units: int) -> None:
        self.left -= elements
        if self.left < 0:
            raise ExpressionError(
                f"LimitExceeded: result is too large (over {MAX_ELEMENTS} elements, text counting one per 8 "
                "characters and a value that appears more than once counting each time)"
            )
        super().pay(0, units)

    def add(self, value: Any, shared: Mapping[int, Any], roots: Mapping[int, int]) -> Any:
        """`value`, an expression's result, converted to data and counted into this result."""
        self.shared, self.roots = shared, roots
        try:
            return self.convert(value)
        except RecursionError:
            raise ExpressionError(f"result is nested more than {MAX_RESULT_DEPTH} levels deep") from None

    def passed_on(self, value: Any, roots: Mapping[int, int]) -> Any:
        """`value`, data the execution holds, as it is: counted unless it is the first of its held value."""
        self.roots = roots
        if type(value) is str:
            if len(value) >= 8 and not self._first(value, held=True):
                self._text(value)
        elif type(value) is list or type(value) is dict:
            self._shared(value, 0)
        return value

    def convert(self, item: Any, depth: int = 0) -> Any:
        if type(item) is str:
            if len(item) >= 8 and not self._first(item, id(item) in self.shared):
                self._text(item)
            return item
        return super().convert(item, depth)

    def _first(self, item: Any, held: bool) -> bool:
        """Whether `item` is the held value that goes free in this result (noting every held one seen)."""
        if not held or id(item) in self.seen:
            return False
        self.seen[id(item)] = [item, None]
        root = self.roots.get(id(item), id(item))
        if root in self.freed:
            return False
        self.freed.add(root)
        return True

    def _text(self, text: str) -> None:
        self.pay(len(text) // 8, len(text) // TEXT_CHARS_PER_UNIT)

    def _shared(self, item: Any, depth: int) -> Any:
        super()._shared(item, depth)  # its nesting
        if self._first(item, held=True):
            return item
        entry = self.seen[id(item)]
        if entry[1] is not None:
            self.pay(entry[1], entry[1] // SCANS_PER_UNIT)
            return item
        try:
            with charging(self.budget):  # the walk charges the step (as bounded_size's does)
                size = entry[1] = counted(item, max(self.left, 0) + 1)
        except LimitExceeded as exc:
            raise ExpressionError(f"LimitExceeded: {exc}") from None
        self.pay(size, 0)
        return item

    def _other(self, item: Any, depth: int) -> Any:
        value = super()._other(item, depth)
        if type(value) is str and len(value) >= 8:  # a str subclass (Jinja's Markup) or a regex match
            self._text(value)
        return value

    def _texts(self, items: Any, kinds: set[type]) -> None:
        strings = (
            items
            if kinds == {str}
            else list(compress(items, map(operator.is_, map(type, items), repeat(str))))
        )
        lengths = list(map(len, strings))
        chars = sum(lengths)
        if chars >= HELD_TEXT:  # long strings may be held data, free the first time (looked at one by one)
            for text in compress(strings, map(operator.ge, lengths, repeat(HELD_TEXT))):
                if self._first(text, id(text) in self.shared):
                    chars -= len(text)
        self.pay(chars // 8, chars // TEXT_CHARS_PER_UNIT)


# Static checks, used when a task is created ----------------------------------------------------------------


def detect_dialect(workflows: Mapping[str, Sequence[lang.StepModel]]) -> Dialect:
    """`dollar` if any string in any step's fields, nested steps included, is a `$ expr`, else `seed`."""
    for name, steps in workflows.items():
        for placed in lang.walk_steps(steps, name):
            if any(has_dollar(raw) for _, raw, _ in placed.step.evaluable_fields(placed.path)):
                return "dollar"
    return "seed"


SHAPE_HINT = (
    " (Julep v1 reads a string that starts with `_.`, `_[` or `[`, or names `inputs[` or `outputs[`, as "
    "Python; write `$ '...'` for text)"
)


def check_value(
    raw: Any,
    kind: str,
    dialect: Dialect,
    extra: frozenset[str] = frozenset(),
    max_length: int = MAX_EXPRESSION_LENGTH,
) -> list[str]:
    """Problems with one field: kind is `value` (read string by string), `expression` or `template`."""
    return [
        p
        for _, text in iter_strings(raw, "")
        for p in _string_problems(text, kind, dialect, extra, max_length)
    ]


def _string_problems(
    text: str, kind: str, dialect: Dialect, extra: frozenset[str], max_length: int
) -> list[str]:
    if kind == "expression":
        return check_expression(python_source(text), extra, max_length)
    reading = read_template(text) if kind == "template" else read_value(text, dialect)
    if reading.how == "python":
        hint = SHAPE_HINT if reading.by_shape else ""
        return [p + hint for p in check_expression(reading.source, extra, max_length)]
    return check_template(text, extra) if reading.how == "template" and is_template(text) else []


def reading_warnings(raw: Any, path: str, kind: str, dialect: Dialect) -> list[tuple[str, str]]:
    """(path, note) for every string in a field that could be read the other way: how it was read."""
    if kind in ("expression", "reduce"):
        return []
    warnings = []
    for where, text in iter_strings(raw, path):
        reading = read_template(text) if kind == "template" else read_value(text, dialect)
        if reading.note:
            warnings.append((where, reading.note))
    return warnings
