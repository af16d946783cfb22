"""map_reduce's reduce, with Julep's accumulation idiom run as an append.

Julep's default reduce is `results + [_]`, and its users write `results + [f(_)]` everywhere. Evaluated as
written, every item copies the whole accumulator (and turning the sum into data copies it again), so n items
cost O(n²) and 10,000 overrun a step's budget. But when the reduce is `results + R`, with R a list display or
comprehension that does not read `results`, each step's value can only be the accumulator followed by R's
elements: so the accumulator is extended in place instead, the same value in linear time. The idiom is
recognised from the expression's syntax tree alone, so the choice is deterministic and replays take it too.
"""

from __future__ import annotations

import ast
import functools
from typing import Any

from expressions.budget import LimitExceeded
from expressions.data import check_length
from expressions.parsing import ExpressionError, parse_expression
from workflows.dialect import python_source
from workflows.values import Names, ValueEvaluator, to_data

DEFAULT_REDUCE = "results + [_]"  # Julep's, when a map_reduce has no `reduce`
DEFAULT_ITEMS = "[_]"
# What the `results + ` part of an appending reduce costs per item: the operation's node, its operator call
# and the name (the right operand is evaluated, and charged, as written).
APPEND_UNITS = 3


@functools.lru_cache(maxsize=1_000)
def appended(source: str) -> str | None:
    """For a reduce `results + R` (R a list display or comprehension that does not read `results`), the
    source of R; else None (the reduce is evaluated as written)."""
    try:
        tree = parse_expression(python_source(source))
    except ExpressionError:
        return None
    if not (
        isinstance(tree, ast.BinOp)
        and isinstance(tree.op, ast.Add)
        and isinstance(tree.left, ast.Name)
        and tree.left.id == "results"
        and isinstance(tree.right, ast.List | ast.ListComp)
    ):
        return None
    if any(isinstance(node, ast.Name) and node.id == "results" for node in ast.walk(tree.right)):
        return None  # R sees the accumulator: leave such a reduce to the general fold
    return ast.unparse(tree.right)


def reduce_results(
    values: ValueEvaluator, reduce: str | None, initial: Any, results: list[Any], names: Names
) -> Any:
    """What a map_reduce returns: `results` folded from `initial` by `reduce` (Julep's default when None).

    The value is always the one evaluating the reduce item by item gives; only its cost differs."""
    source = DEFAULT_REDUCE if reduce is None else reduce
    items = appended(source)
    if items is None or not isinstance(initial, list):
        return fold(values, source, initial, results, names)  # a non-list `initial` fails as written would
    if not results:
        return initial
    written = python_source(source)  # as messages quote it
    accumulated = to_data(initial, values.budget)  # a fresh list, converted as the first evaluation would
    if items == DEFAULT_ITEMS:
        # The results are data already: the engine's own concatenation, as when no reduce is given.
        _limit(len(accumulated) + len(results), written)
        return accumulated + results
    for result in results:
        _charge(values, APPEND_UNITS, written)
        accumulated.extend(_evaluate(values, items, written, {**names, "_": result}))
        _limit(len(accumulated), written)
    return accumulated


def fold(values: ValueEvaluator, source: str, initial: Any, results: list[Any], names: Names) -> Any:
    """Evaluate `source` once per result, as written, with `results` the value so far and `_` the result."""
    accumulated = initial
    for result in results:
        accumulated = values.expression(source, {**names, "results": accumulated, "_": result})
    return accumulated


def _evaluate(values: ValueEvaluator, items: str, written: str, names: Names) -> Any:
    try:
        return values.expression(items, names)
    except ExpressionError as exc:  # name the reduce the user wrote, not the part of it evaluated
        raise ExpressionError(str(exc).replace(repr(items), repr(written))) from None


def _charge(values: ValueEvaluator, units: int, written: str) -> None:
    try:
        values.budget.charge(units)
    except LimitExceeded as exc:
        raise ExpressionError(f"LimitExceeded: {exc} (in {written!r})") from None


def _limit(length: int, written: str) -> None:
    """The length check `+` makes on the list it builds, so an append fails where the sum would."""
    try:
        check_length(length)
    except LimitExceeded as exc:
        raise ExpressionError(f"LimitExceeded: {exc} (in {written!r})") from None
