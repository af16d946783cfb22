"""Plain data in the sandbox: its size and depth, checked before a value is built, the set type expressions
get, and integer keys chosen to collide."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator
from datetime import date, datetime, timedelta
from datetime import time as dtime
from itertools import chain, compress, repeat
from typing import Any

from expressions.budget import (
    CHARS_PER_UNIT,
    ELEMENTS_PER_UNIT,
    MAX_ELEMENTS,
    MAX_STRING_LENGTH,
    SCANS_PER_UNIT,
    SMALL_INT_BITS,
    LimitExceeded,
    active_budget,
    int_units,
)


def value_units(value: Any) -> int:
    """What reading `value` once costs at C speed: its length, or its size for a big integer."""
    if type(value) is int:
        return int_units(value)
    return size_units(value)


# Integers hash to themselves modulo 2**61 - 1, so larger ones can be chosen to share a hash, and a dict or
# set of n of them takes n * n comparisons to build: they may not be keys or members.
HASH_MODULUS = 2**61 - 1


def charge_key(key: Any) -> None:
    """Charge for hashing `key`: a tuple walks its members every time (it keeps no hash), the rest is cheap;
    refuse a key that could collide on purpose (see HASH_MODULUS)."""
    kind = type(key)
    if kind is tuple:
        bounded_size(key)
        _refuse_colliding(key)
    elif kind is int and not -HASH_MODULUS < key < HASH_MODULUS:
        _refuse_colliding((key,))


def charge_keys(items: Any) -> None:
    """charge_key for each of `items` (building a set or dict from them), at C speed for the common kinds."""
    if isinstance(items, dict | OrderedSet):
        items = list(items)
    if not isinstance(items, list | tuple) or not items:
        return
    if tuple in set(map(type, items)):
        bounded_size([item for item in items if type(item) is tuple])
    _refuse_colliding(items)


def _refuse_colliding(items: list[Any] | tuple[Any, ...]) -> None:
    kinds = set(map(type, items))
    if int in kinds:
        numbers = items if len(kinds) == 1 else [item for item in items if type(item) is int]
        if max(map(abs, numbers)) >= HASH_MODULUS:
            raise LimitExceeded("a number past 2**61 cannot be a dict key or set member")
    if tuple in kinds:
        for item in items:
            if type(item) is tuple:
                _refuse_colliding(item)


def size_units(value: Any) -> int:
    """The units a pass over `value` at C speed costs (0 for scalars)."""
    kind = type(value)
    if kind is str or kind is bytes:
        return len(value) // CHARS_PER_UNIT
    if kind in _COLLECTIONS:
        return len(value) // SCANS_PER_UNIT
    return 0


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


ATOM_TYPES = frozenset({type(None), bool, int, float, datetime, date, dtime, timedelta})
_ATOMS_AND_TEXT = ATOM_TYPES | {str, bytes}
_COLLECTIONS: frozenset[type] = frozenset({list, tuple, dict, OrderedSet, set, frozenset})
CHEAP_TYPES = frozenset({type(None), bool, int, float})
TEXT_TYPES = frozenset({str, bytes})
DATA_TYPES = _ATOMS_AND_TEXT | _COLLECTIONS
CONTAINER_WEIGHT = 8


def bounded_size(value: Any, limit: int = MAX_ELEMENTS) -> int:
    """Count the values in plain data (a string counts 1 + len // 8, a list or dict CONTAINER_WEIGHT: it
    costs that much more to walk or print), refusing anything that is not data and stopping past `limit`;
    shared references count each time they appear (str and JSON repeat them).

    The walk charges the active budget (a unit per ELEMENTS_PER_UNIT values) and stops once it cannot pay."""
    count = counted(value, limit)
    if count > limit:
        raise LimitExceeded(f"value is too large (over {limit} elements)")
    return count


def counted(value: Any, most: int = MAX_ELEMENTS) -> int:
    """bounded_size's walk and charge, stopping (with a count past `most`, but no complaint) once past it."""
    budget = active_budget()
    cap = most if budget is None else min(most, (max(budget.left, 0) + 1) * ELEMENTS_PER_UNIT)
    count = _count(value, cap)
    if budget is not None:
        budget.charge(count // ELEMENTS_PER_UNIT)
    return count


def _count(value: Any, cap: int) -> int:
    count = 0
    stack = [value]
    while stack and count <= cap:
        item = stack.pop()
        kind = type(item)
        count += 1
        if kind in ATOM_TYPES:
            if kind is int and item.bit_length() > SMALL_INT_BITS:  # printed in quadratic time
                count += ELEMENTS_PER_UNIT * int_units(item, item, product=True)
            continue
        if kind is str or kind is bytes:
            count += len(item) // 8
            continue
        count += CONTAINER_WEIGHT - 1
        if kind is dict:
            count += _scan(item.keys(), stack, cap - count)
            count += _scan(item.values(), stack, cap - count)
        elif kind in _COLLECTIONS:
            if len(item) <= 8:
                stack.extend(item)  # small: cheaper to walk than to scan
            else:
                count += _scan(item, stack, cap - count)
        elif isinstance(item, str | bytes):  # a subclass, such as Jinja's Markup
            count += len(item) // 8 - CONTAINER_WEIGHT + 1
        elif isinstance(item, dict):
            count += _scan(item.keys(), stack, cap - count)
            count += _scan(item.values(), stack, cap - count)
        elif isinstance(item, list | tuple):
            count += _scan(item, stack, cap - count)
        else:
            raise LimitExceeded(f"a {kind.__name__} is not data")
    return count


def _scan(items: Any, stack: list[Any], room: int) -> int:
    """Count a collection's scalar members in bulk (at C speed when they are all numbers and the like) and
    push the others for the walk; returns what it counted."""
    size = len(items)
    if size > room:
        return size  # over the cap either way
    kinds = set(map(type, items))
    if kinds <= ATOM_TYPES:
        if int in kinds:  # big integers print in quadratic time
            ints = items if len(kinds) == 1 else [i for i in items if type(i) is int]
            top = max(map(int.bit_length, ints))
            if top > SMALL_INT_BITS:
                return size * (1 + ELEMENTS_PER_UNIT * int_units(1 << top, 1 << top, product=True))
        return size
    if kinds <= _ATOMS_AND_TEXT:
        return size + sum(len(i) for i in items if type(i) is str or type(i) is bytes) // 8
    stack.extend(items)
    return 0


def nests_deeper(value: Any, levels: int) -> tuple[bool, int]:
    """Whether lists and dicts nest more than `levels` deep in `value` (a flat list is one level), and how
    many members the walk looked at to find out: a level at a time, every step of it at C speed."""
    level, depth, scanned = [value], 0, 0
    while level:
        depth += 1
        if depth > levels:
            return True, scanned
        dicts = compress(level, map(operator.is_, map(type, level), repeat(dict)))
        lists = compress(level, map(operator.is_, map(type, level), repeat(list)))
        members = [*chain.from_iterable(map(dict.values, dicts)), *chain.from_iterable(lists)]
        scanned += len(level) + len(members)
        level = list(compress(members, map(_NESTS.__contains__, map(type, members))))
    return False, scanned


_NESTS = frozenset({list, dict})
NESTING_SCANS_PER_UNIT = 8  # nests_deeper: 60-100 ns a member, measured
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
