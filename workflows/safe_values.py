"""Limits for user expressions and templates: a work budget, size checks, and plain-data rules.

Expressions run inside Temporal workflow tasks, which Temporal treats as deadlocked after 2 s, on workers
shared by every tenant. So work is counted (deterministically, in operations, never in seconds) and sizes are
checked before a value is built, not after.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import date, datetime, timedelta
from typing import Any

MAX_STRING_LENGTH = 1_000_000
MAX_RANGE = 100_000
MAX_ELEMENTS = 1_000_000
MAX_POWER_RESULT_BITS = 100_000
MAX_FORMAT_WIDTH = 1_000
# Operations one step may spend (an AST node is one; a builtin costs the size of its input), and how many a
# workflow task may spend before the interpreter yields to Temporal (at roughly a microsecond each).
STEP_BUDGET = 500_000
YIELD_AFTER = 250_000


class LimitExceeded(ValueError):
    """An expression or template would do too much work or build too large a value."""


class Budget:
    """Counts the work of one execution's expressions: per step, and since the workflow last yielded."""

    def __init__(self, per_step: int = STEP_BUDGET):
        self.per_step = per_step
        self.left = per_step
        self.since_yield = 0

    def charge(self, units: int) -> None:
        self.left -= units
        self.since_yield += units
        if self.left < 0:
            raise LimitExceeded(
                f"a step may do at most {self.per_step} operations; split the work across steps"
            )

    def start_step(self) -> None:
        self.left = self.per_step

    def yielded(self) -> None:
        self.since_yield = 0

    @property
    def should_yield(self) -> bool:
        return self.since_yield >= YIELD_AFTER


class OrderedSet:
    """The set expressions get: iteration follows insertion order, so replays see the same order.

    (Python's own sets iterate strings in an order that changes from process to process.)"""

    __slots__ = ("_items",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, items: Iterable[Any] = ()):
        self._items = dict.fromkeys(items)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, item: Any) -> bool:
        return item in self._items

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OrderedSet | set | frozenset) and set(self._items) == set(other)

    def __or__(self, other: Iterable[Any]) -> OrderedSet:
        return OrderedSet([*self._items, *other])

    def __and__(self, other: Iterable[Any]) -> OrderedSet:
        keep = set(other)
        return OrderedSet(i for i in self._items if i in keep)

    def __sub__(self, other: Iterable[Any]) -> OrderedSet:
        drop = set(other)
        return OrderedSet(i for i in self._items if i not in drop)

    def __xor__(self, other: Iterable[Any]) -> OrderedSet:
        theirs = OrderedSet(other)
        return (self - theirs) | (theirs - self)

    def __le__(self, other: Iterable[Any]) -> bool:
        return set(self._items) <= set(other)

    def __ge__(self, other: Iterable[Any]) -> bool:
        return set(self._items) >= set(other)

    def __lt__(self, other: Iterable[Any]) -> bool:
        return set(self._items) < set(other)

    def __gt__(self, other: Iterable[Any]) -> bool:
        return set(self._items) > set(other)

    def __repr__(self) -> str:
        return "{" + ", ".join(repr(i) for i in self._items) + "}" if self._items else "set()"


_SCALARS = (type(None), bool, int, float, str, bytes, datetime, date, timedelta)


def bounded_size(value: Any, limit: int = MAX_ELEMENTS) -> int:
    """Count the elements of plain data (strings count by length / 8), refusing anything that is not data
    and stopping past `limit`; shared references count each time they appear."""
    count = 0
    stack = [value]
    while stack:
        item = stack.pop()
        count += 1
        if isinstance(item, str | bytes):
            count += len(item) // 8
        elif isinstance(item, dict | list | tuple | OrderedSet | set | frozenset):
            count += len(item) * (2 if isinstance(item, dict) else 1)
            if count > limit:
                break
            stack.extend(item.items() if isinstance(item, dict) else item)
        elif not isinstance(item, _SCALARS):
            raise LimitExceeded(f"a {type(item).__name__} is not data")
        if count > limit:
            break
    if count > limit:
        raise LimitExceeded(f"value is too large (over {limit} elements)")
    return count


MAX_DEPTH = 64


def check_depth(value: Any, limit: int = MAX_DEPTH) -> None:
    """Refuse data nested deeper than `limit` (recursive code further on would overflow)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            raise LimitExceeded(f"data is nested more than {limit} levels deep")
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list | tuple):
            stack.extend((v, depth + 1) for v in item)


def check_text(text: str) -> str:
    if len(text) > MAX_STRING_LENGTH:
        raise LimitExceeded(f"string longer than {MAX_STRING_LENGTH} characters")
    return text


def check_length(length: int) -> None:
    if length > MAX_STRING_LENGTH:
        raise LimitExceeded(f"result longer than {MAX_STRING_LENGTH}")


def safe_str(value: Any = "") -> str:
    """str() of plain data only (never a function's address), refusing huge results."""
    bounded_size(value)
    return check_text(str(value))


def check_format_spec(spec: str) -> None:
    """Refuse format widths and precisions that would build huge strings (`{x:>1000000000}`)."""
    if "*" in spec:
        raise LimitExceeded("`*` widths are not supported in formats")
    number = ""
    for char in spec + " ":
        if char.isdigit():
            number += char
            continue
        if number and int(number) > MAX_FORMAT_WIDTH:
            raise LimitExceeded(f"format width {number} is over {MAX_FORMAT_WIDTH}")
        number = ""


def safe_add(a: Any, b: Any) -> Any:
    if hasattr(a, "__len__") and hasattr(b, "__len__"):
        check_length(len(a) + len(b))
    return a + b


def safe_mult(a: Any, b: Any) -> Any:
    for seq, times in ((a, b), (b, a)):
        if hasattr(seq, "__len__") and isinstance(times, int):
            check_length(times * len(seq))
    return a * b


_PERCENT_FIELD = re.compile(r"%[-+ #0]*(\*|\d+)?(?:\.(\*|\d+))?")


def safe_mod(a: Any, b: Any) -> Any:
    """`%` formatting with its widths and precisions bounded like format specs."""
    if isinstance(a, str):
        for match in _PERCENT_FIELD.finditer(a):
            for number in match.groups():
                if number == "*" or (number and int(number) > MAX_FORMAT_WIDTH):
                    raise LimitExceeded(f"format field {match.group(0)!r} is too wide")
        return check_text(a % b)
    return a % b


def safe_power(base: Any, exponent: Any) -> Any:
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and base not in (0, 1, -1):
        if abs(base).bit_length() * exponent > MAX_POWER_RESULT_BITS:
            raise LimitExceeded(f"{base} ** {exponent} is too large")
    return base**exponent


def safe_lshift(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int) and abs(a).bit_length() + b > MAX_POWER_RESULT_BITS:
        raise LimitExceeded(f"{a} << {b} is too large")
    return a << b
