"""The attributes expressions and templates may read on values, and the methods they may call.

A method reached by attribute access (`text.upper`, `items.count`) is an ordinary value afterwards: it can
be passed to map, sorted(key=...), filter or max(key=...) and called any number of times. So a method is
never handed out raw. It comes back as a Method, which charges the work budget, and checks the size of
what it would build, on every call and before the call. Whatever is not listed here is not reachable.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import date, datetime, timedelta, timezone
from datetime import time as dtime
from typing import Any

import re2

from expressions import csv_rows
from expressions.budget import (
    CHARS_PER_UNIT,
    COPIES_PER_UNIT,
    ELEMENTS_PER_UNIT,
    MAX_FORMAT_WIDTH,
    LimitExceeded,
    charge,
)
from expressions.data import bounded_size, charge_key, check_length, value_units
from expressions.functions import safe_join, safe_replace
from expressions.regex import group_chars

# What a call may do before it runs: charge the active budget and refuse what would build too much.
Rule = Callable[[Any, tuple[Any, ...], Mapping[str, object]], None]
MATCH = type(re2.search("a", "a"))
# Unicode case mappings turn a character into at most this many ("ß".upper() is "SS", "ΐ" three).
CASE_GROWTH = 3
SPLIT_CHARS_PER_UNIT = 8  # a split builds a string per piece: at worst one per two characters


class Method:
    """A method of a value; each call is charged by its rule first (see the module docstring)."""

    __slots__ = ("_obj", "_func", "_rule")  # underscored: nothing on it is reachable from a template

    def __init__(self, obj: Any, func: Callable[..., Any], rule: Rule):
        self._obj, self._func, self._rule = obj, func, rule

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self._rule(self._obj, args, kwargs)
        return self._func(self._obj, *args, **kwargs)

    def __repr__(self) -> str:
        return f"<method {getattr(self._func, '__name__', '?')} of {type(self._obj).__name__}>"


def arguments_units(args: tuple[Any, ...], kwargs: Mapping[str, object]) -> int:
    """A unit per call, plus a pass over each argument (a method reads what it is given)."""
    return 1 + sum(map(value_units, args)) + sum(map(value_units, kwargs.values()))


# Rules ----------------------------------------------------------------------------------------------------


def constant(obj: Any, args: tuple[Any, ...], kwargs: Mapping[str, object]) -> None:
    """Work and result independent of the object's size (datetime.isoformat(), match.start())."""
    charge(arguments_units(args, kwargs))


def scan(obj: Any, args: tuple[Any, ...], kwargs: Mapping[str, object]) -> None:
    """One pass over the object at C speed, building at most a copy of it (find, count, isdigit, partition)."""
    charge(arguments_units(args, kwargs) + len(obj) // CHARS_PER_UNIT)


def case_mapping(obj: str, args: tuple[Any, ...], kwargs: Mapping[str, object]) -> None:
    """upper/lower/title...: ASCII text keeps its length, other text may grow CASE_GROWTH-fold."""
    length = len(obj) if obj.isascii() else len(obj) * CASE_GROWTH
    check_length(length)
    charge(arguments_units(args, kwargs) + length // CHARS_PER_UNIT)


def stripping(obj: str, args: tuple[Any, ...], kwargs: Mapping[str, object]) -> None:
    """strip(chars): each character stripped is looked up in `chars`."""
    chars = args[0] if args else kwargs.get("chars")
    width = 1 + (len(chars) // CHARS_PER_UNIT if isinstance(chars, str) else 0)
    charge(arguments_units(args, kwargs) + len(obj) * width // CHARS_PER_UNIT)


def affixes(obj: str, args: tuple[Any, ...], kwargs: Mapping[str, object]) -> None:
    """startswith/endswith: a tuple of prefixes is compared one by one."""
    count = len(args[0]) if args and isinstance(args[0], tuple) else 1
    charge(arguments_units(args, kwargs) + count * (1 + len(obj) // CHARS_PER_UNIT))


def splitting(obj: str, args: tuple[Any, ...], kwargs: Mapping[str, object]) -> None:
    """split/rsplit/splitlines build a string and a list slot per piece."""
    charge(arguments_units(args, kwargs) + len(obj) // SPLIT_CHARS_PER_UNIT)


def builds_own(obj: Any, args: tuple[Any, ...], kwargs: Mapping[str, object]) -> None:
    """The function checks and charges what it builds itself (join, replace): a unit for the call."""
    charge(1)


def deep_scan(obj: Any, args: tuple[Any, ...], kwargs: Mapping[str, object]) -> None:
    """list.index/count compare elements, and comparing nested values walks them."""
    bounded_size(obj)
    for value in (*args, *kwargs.values()):
        bounded_size(value)
    charge(1)


def hashing(obj: Any, args: tuple[Any, ...], kwargs: Mapping[str, object]) -> None:
    """dict.get hashes its key (a tuple walks its members every time)."""
    if args:
        charge_key(args[0])
    charge(arguments_units(args, kwargs))


def copying(per_unit: int) -> Rule:
    """A new list of the dict's keys, values, or (key, value) tuples."""

    def rule(obj: Any, args: tuple[Any, ...], kwargs: Mapping[str, object]) -> None:
        charge(1 + len(obj) // per_unit)

    return rule


def strftime_format(obj: Any, args: tuple[Any, ...], kwargs: Mapping[str, object]) -> None:
    """strftime: a directive expands up to twelvefold (`%c`), so the format itself is kept short."""
    form = args[0] if args else kwargs.get("format", "")
    if not isinstance(form, str) or len(form) > MAX_FORMAT_WIDTH:
        raise LimitExceeded(f"a strftime format may be at most {MAX_FORMAT_WIDTH} characters")
    charge(1 + len(form) // 2)  # about a microsecond per directive


def match_group(obj: Any, args: tuple[Any, ...], kwargs: Mapping[str, object]) -> None:
    """group(...) copies the matched text out of the string: charged by its length."""
    charge(arguments_units(args, kwargs) + len(args) + group_chars(obj, args or (0,)) // CHARS_PER_UNIT)


def match_all_groups(obj: Any, args: tuple[Any, ...], kwargs: Mapping[str, object]) -> None:
    """groups()/groupdict() copy every group."""
    groups = range(1, obj.re.groups + 1)
    charge(arguments_units(args, kwargs) + len(groups) + group_chars(obj, groups) // CHARS_PER_UNIT)


# The table ------------------------------------------------------------------------------------------------


def _dict_view(name: str) -> Callable[[dict[Any, Any]], list[Any]]:
    """keys()/values()/items() as lists (views are not data)."""
    view = getattr(dict, name)
    return lambda obj: list(view(obj))


def _bound(cls: type, rule: Rule, names: str) -> dict[str, tuple[Callable[..., Any], Rule]]:
    return {name: (getattr(cls, name), rule) for name in names.split()}


def _str_methods() -> dict[str, tuple[Callable[..., Any], Rule]]:
    return {
        **_bound(str, case_mapping, "upper lower title capitalize casefold"),
        **_bound(str, stripping, "strip lstrip rstrip"),
        **_bound(str, splitting, "split rsplit splitlines"),
        **_bound(str, affixes, "startswith endswith"),
        **_bound(
            str,
            scan,
            "find rfind index count partition removeprefix removesuffix "
            "isdigit isalpha isalnum isspace islower isupper",
        ),
        "join": (safe_join, builds_own),
        "replace": (safe_replace, builds_own),
    }


def _datetime_methods(cls: type[date] | type[dtime]) -> dict[str, tuple[Callable[..., Any], Rule]]:
    names = "isoformat" if cls is dtime else "isoformat weekday isoweekday"
    names += " timestamp date" if cls is datetime else ""
    return {**_bound(cls, constant, names), "strftime": (cls.strftime, strftime_format)}


def _writer_methods(cls: type[csv_rows.Writer]) -> dict[str, tuple[Callable[..., Any], Rule]]:
    """csv writers: each method checks and charges what it writes itself."""
    names = "writerow writerows getvalue" + (" writeheader" if cls is csv_rows.DictWriter else "")
    return _bound(cls, builds_own, names)


METHODS: dict[type, dict[str, tuple[Callable[..., Any], Rule]]] = {
    str: _str_methods(),
    list: _bound(list, deep_scan, "index count"),
    tuple: _bound(tuple, deep_scan, "index count"),
    dict: {
        "get": (dict.get, hashing),
        "keys": (_dict_view("keys"), copying(COPIES_PER_UNIT)),
        "values": (_dict_view("values"), copying(COPIES_PER_UNIT)),
        "items": (_dict_view("items"), copying(ELEMENTS_PER_UNIT)),
    },
    datetime: _datetime_methods(datetime),
    date: _datetime_methods(date),
    dtime: _datetime_methods(dtime),
    csv_rows.Writer: _writer_methods(csv_rows.Writer),
    csv_rows.DictWriter: _writer_methods(csv_rows.DictWriter),
    timedelta: _bound(timedelta, constant, "total_seconds"),
    MATCH: {
        **_bound(MATCH, match_group, "group"),
        **_bound(MATCH, match_all_groups, "groups groupdict"),
        **_bound(MATCH, constant, "start end span"),
    },
}
# Plain data read by attribute (never callable: a test checks).
DATA_ATTRIBUTES: dict[type, frozenset[str]] = {
    datetime: frozenset("year month day hour minute second microsecond tzinfo".split()),
    date: frozenset("year month day".split()),
    dtime: frozenset("hour minute second microsecond tzinfo".split()),
    timedelta: frozenset("days seconds".split()),
    timezone: frozenset({"utc"}),  # Julep's `datetime.timezone.utc.utc`
    csv_rows.DictWriter: frozenset({"fieldnames"}),
}
MISSING = object()


def attribute(obj: Any, name: str, kind: type | None = None) -> Any:
    """`obj.name` if allowed (a data attribute, or a method wrapped as a Method), else MISSING.

    `kind` is the type whose rules apply (a subclass of str, such as Jinja's Markup, gets str's)."""
    kind = kind or type(obj)
    if name in DATA_ATTRIBUTES.get(kind, ()):
        return getattr(obj, name)
    method = METHODS.get(kind, {}).get(name)
    if method is None:
        return MISSING
    return Method(obj, *method)


def charge_subscript(container: Any, key: Any) -> None:
    """`container[key]`: a match copies the group out of its string; a tuple key is hashed (walked)."""
    if type(container) is MATCH:
        charge(group_chars(container, (key,)) // CHARS_PER_UNIT)
    else:
        charge_key(key)
