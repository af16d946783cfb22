"""The functions task expressions and templates may call, and the attributes they may read.

Every function takes and returns plain data, charges the execution's work budget by the size of its input,
and checks the size of what it would build before building it. Randomness comes from the workflow.
Regular expressions use RE2 (linear time, no backreferences or lookarounds): a pattern cannot hang a worker.
"""

from __future__ import annotations

import functools
import itertools
import json as _json
import random as _random
from collections.abc import Callable
from datetime import date, datetime, timedelta
from typing import Any

import re2
import yaml as _yaml

from workflows.safe_values import (
    CHARS_PER_UNIT,
    COPIES_PER_UNIT,
    ELEMENTS_PER_UNIT,
    MAX_ELEMENTS,
    MAX_RANGE,
    MAX_STRING_LENGTH,
    SCANS_PER_UNIT,
    SQUARE_BITS,
    Budget,
    LimitExceeded,
    OrderedSet,
    big_ints_units,
    bounded_size,
    charge,
    check_length,
    check_text,
    safe_divmod,
    safe_int,
    safe_power,
    safe_round,
    safe_str,
)

MAX_INDENT = 16
_YAML_LOADER = getattr(_yaml, "CSafeLoader", _yaml.SafeLoader)
_YAML_DUMPER = getattr(_yaml, "CSafeDumper", _yaml.SafeDumper)
# Units per item (a character of a string argument, an element of a collection) of functions whose work
# grows with their input, measured against the budget's unit (see safe_values). YAML is built by Python code.
C_SPEED = 1 / SCANS_PER_UNIT
JSON_LOAD_PER_CHAR = 1 / 32
YAML_LOAD_PER_CHAR = 6
YAML_DUMP_PER_VALUE = 16
STATISTICS_PER_VALUE = 4
SORT_PER_ELEMENT = 0.5
PAIRS_PER_ELEMENT = 0.5  # enumerate, zip, map, filter: a tuple or a call per element
# A regular expression call costs about this much whatever its text (RE2 compiles the pattern first), and
# so does setting up a JSON encoder.
REGEX_CALL = 32
JSON_DUMP_UNITS = 16


def _size(value: Any) -> int:
    return len(value) if hasattr(value, "__len__") else 1


def charged(budget: Budget, func: Callable[..., Any], per_item: float = C_SPEED) -> Callable[..., Any]:
    """`func`, charging the budget for the size of its arguments first (a builtin runs at C speed, but not
    free): a unit, plus `per_item` per character or element."""

    def call(*args: Any, **kwargs: Any) -> Any:
        budget.charge(1 + int(sum(_size(a) for a in args) * per_item))
        return func(*args, **kwargs)

    call.__name__ = getattr(func, "__name__", "function")
    return call


def eager(func: Callable[..., Any]) -> Callable[..., list[Any]]:
    """map/filter/zip/enumerate as lists: a lazy iterator would slip past the budget."""
    return lambda *args: list(func(*args))


def dump_json(
    value: Any, indent: int | None = None, sort_keys: bool = False, ensure_ascii: bool = False
) -> str:
    values = bounded_size(value)
    indent = None if indent is None else max(0, min(int(indent), MAX_INDENT))
    if indent:  # every value may start a line indented by its depth
        check_length(values * (indent * _depth(value) + 2))
    charge(JSON_DUMP_UNITS + values // ELEMENTS_PER_UNIT)
    text = _json.dumps(value, indent=indent, ensure_ascii=ensure_ascii, allow_nan=False, sort_keys=sort_keys)
    return check_text(text)


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values() if isinstance(v, dict | list | tuple))
        elif isinstance(item, list | tuple):
            stack.extend((v, depth + 1) for v in item if isinstance(v, dict | list | tuple))
    return deepest


_LONG_NUMBER = re2.compile(r"\d{100,}")


def load_json(text: str) -> Any:
    charge(int(len(check_text(text)) * JSON_LOAD_PER_CHAR))
    for digits in _LONG_NUMBER.findall(text):  # a big integer parses in quadratic time
        charge((4 * len(digits)) ** 2 // SQUARE_BITS)
    return _json.loads(text)


def dump_yaml(value: Any) -> str:
    charge(bounded_size(value) * YAML_DUMP_PER_VALUE)
    return check_text(_yaml.dump(value, Dumper=_YAML_DUMPER, sort_keys=False, allow_unicode=True))


def load_yaml(text: str) -> Any:
    charge(len(check_text(text)) * YAML_LOAD_PER_CHAR)
    # The safe loader builds only plain data; aliases can still multiply it, hence the size check after.
    loaded = _yaml.load(text, Loader=_YAML_LOADER)  # noqa: S506 - a safe loader
    bounded_size(loaded)
    return loaded


def safe_join(separator: str, items: Any) -> str:
    items = list(items)
    length = sum(len(i) for i in items if isinstance(i, str)) + len(separator) * max(len(items) - 1, 0)
    check_length(length)
    charge(len(items) // SCANS_PER_UNIT + length // CHARS_PER_UNIT)
    return separator.join(items)


def _str_replace(text: str) -> Callable[..., str]:
    def replace(old: str, new: str, count: int = -1) -> str:
        hits = text.count(old) if count < 0 else min(count, text.count(old))
        check_length(len(text) + hits * max(len(new) - len(old), 0))
        charge((len(text) + hits * len(new)) // CHARS_PER_UNIT)
        return text.replace(old, new, count)

    return replace


# str methods whose result size depends on their arguments are wrapped with a size check.
STR_METHOD_WRAPPERS: dict[str, Callable[[str], Callable[..., Any]]] = {
    "join": lambda sep: lambda items: safe_join(sep, items),
    "replace": _str_replace,
}
# str methods that build a value per piece of the string (charged per character at list speed).
STR_SPLITTERS = frozenset({"split", "rsplit", "splitlines"})


def method_units(obj: Any, name: str) -> int:
    """What calling method `name` of `obj` may cost (the scan or copy of `obj`; deep walks for list and
    tuple methods, whose comparisons look inside elements)."""
    if isinstance(obj, str):
        return 1 + len(obj) // (ELEMENTS_PER_UNIT * 4 if name in STR_SPLITTERS else CHARS_PER_UNIT)
    if isinstance(obj, list | tuple):
        return 1 + bounded_size(obj) // ELEMENTS_PER_UNIT
    if isinstance(obj, dict):  # items() builds a tuple per entry
        return 1 + len(obj) // (ELEMENTS_PER_UNIT if name == "items" else SCANS_PER_UNIT)
    return 1


@functools.lru_cache(maxsize=1_000)
def _compiled(pattern: str) -> Any:
    return re2.compile(pattern)


def _regex(pattern: str) -> Any:
    # Long patterns are not cached: the cache is shared by every execution on the worker.
    return _compiled(pattern) if len(pattern) <= 1_000 else re2.compile(pattern)


def regex(name: str, budget: Budget) -> Callable[..., Any]:
    """An RE2 function (search, match, fullmatch, findall, split), charged by text length; findall and
    split build a value per match, so their text costs more."""
    func = getattr(re2, name)
    per_char = 4 if name in ("findall", "split") else 16

    def call(pattern: str, text: str, *args: Any) -> Any:
        budget.charge(REGEX_CALL + len(pattern) // 8 + len(check_text(text)) // per_char)
        if args:
            return func(pattern, text, *args)
        return getattr(_regex(pattern), name)(text)

    call.__name__ = name
    return call


def regex_sub(budget: Budget) -> Callable[..., str]:
    def sub(pattern: str, replacement: str, text: str, count: int = 0) -> str:
        budget.charge(REGEX_CALL + len(pattern) // 8 + len(check_text(text)) // 8)
        compiled = _regex(pattern)
        # Each match adds the replacement, and each group reference in it at most the text once more
        # (matches do not overlap); count only the matches that could still fit.
        references = replacement.count("\\")
        check_length(len(text) * (1 + references))
        fits = (MAX_STRING_LENGTH - len(text) * (1 + references)) // max(len(replacement), 1) + 1
        matches = sum(1 for _ in itertools.islice(compiled.finditer(text), min(count or fits, fits)))
        check_length(len(text) * (1 + references) + matches * len(replacement))
        budget.charge((len(text) + matches * len(replacement)) // CHARS_PER_UNIT)
        return compiled.sub(replacement, text, count=count)

    return sub


def _randint_factory(rng: _random.Random) -> Callable[..., int]:
    def randint(a: int, b: int | None = None) -> int:
        """randint(n) picks from range(n) (the seed's usage); randint(a, b) is Python's inclusive form."""
        if b is None:
            return rng.randrange(a)
        return rng.randint(a, b)

    return randint


def safe_range(*args: int) -> range:
    result = range(*args)
    if len(result) > MAX_RANGE:
        raise LimitExceeded(f"range of {len(result)} items is over the limit of {MAX_RANGE}")
    return result


_TYPES = {str: str, int: int, float: float, bool: bool, list: list, dict: dict, tuple: tuple}


def _isinstance(value: Any, kind: Any) -> bool:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if any(k is _set for k in kinds) and isinstance(value, OrderedSet):
        return True
    return isinstance(value, tuple(k for k in kinds if k in _TYPES))


def _set(items: Any = ()) -> OrderedSet:
    return OrderedSet(items)


def _sorted(items: Any, key: Callable[[Any], Any] | None = None, reverse: bool = False) -> list[Any]:
    return sorted(items, key=key, reverse=reverse)


def safe_sum(items: Any, start: Any = 0) -> Any:
    """sum(); adding lists (`sum(lists, [])`) copies the total so far at every step, and adding big integers
    goes by their size, so those are charged."""
    if not isinstance(start, list | tuple):
        charge(big_ints_units(items, product=False))
        return sum(items, start)
    items = list(items)
    length, work = len(start), 0
    for item in items:
        length += _size(item)
        work += length
    check_length(length)
    charge(work // COPIES_PER_UNIT)
    return sum(items, start)


def build_functions(rng: _random.Random, budget: Budget) -> dict[str, Any]:
    """The functions callable by name in expressions and templates."""

    def c(func: Callable[..., Any], per_item: float = C_SPEED) -> Callable[..., Any]:
        return charged(budget, func, per_item)

    return {
        "len": len,
        "str": c(safe_str, 0),  # charges its own walk
        "int": c(safe_int, 0),  # charges the conversion
        "float": float,
        "bool": bool,
        "abs": abs,
        "round": safe_round,
        "pow": safe_power,
        "divmod": safe_divmod,
        "isinstance": _isinstance,
        "list": c(list),
        "dict": c(dict),
        "set": c(_set),
        "tuple": c(tuple),
        "sum": c(safe_sum),
        "min": c(min),
        "max": c(max),
        "any": c(any),
        "all": c(all),
        "sorted": c(_sorted, SORT_PER_ELEMENT),
        "reversed": c(lambda xs: list(reversed(xs))),
        "enumerate": c(eager(enumerate), PAIRS_PER_ELEMENT),
        "zip": c(eager(zip), PAIRS_PER_ELEMENT),
        "map": c(eager(map), PAIRS_PER_ELEMENT),
        "filter": c(eager(filter), PAIRS_PER_ELEMENT),
        "range": c(safe_range),
        "join": c(safe_join, 0),
        "load_json": c(load_json, 0),  # these four charge by what they read or write
        "dump_json": c(dump_json, 0),
        "load_yaml": c(load_yaml, 0),
        "dump_yaml": c(dump_yaml, 0),
        "search_regex": regex("search", budget),
        "match_regex": regex("match", budget),
        "randint": _randint_factory(rng),
        "random": rng.random,
        "choice": c(rng.choice, 0),
        "sample": c(rng.sample),
        "shuffle": c(lambda xs: rng.sample(list(xs), len(xs))),
    }


_RE2_MATCH = type(re2.search("a", "a"))
_STR_METHODS = frozenset(
    {
        "upper",
        "lower",
        "strip",
        "lstrip",
        "rstrip",
        "split",
        "rsplit",
        "splitlines",
        "startswith",
        "endswith",
        "replace",
        "find",
        "rfind",
        "index",
        "count",
        "title",
        "capitalize",
        "isdigit",
        "isalpha",
        "isalnum",
        "isspace",
        "islower",
        "isupper",
        "partition",
        "casefold",
        "removeprefix",
        "removesuffix",
        "join",
    }
)
_DATETIME_ATTRS = frozenset(
    {
        "year",
        "month",
        "day",
        "hour",
        "minute",
        "second",
        "microsecond",
        "isoformat",
        "weekday",
        "isoweekday",
        "timestamp",
        "strftime",
        "date",
        "tzinfo",
    }
)

# Attributes expressions may read, by exact type. Mutating methods are left out on purpose: step outputs
# are shared between steps and buffered transitions, so an expression must never change one in place.
ATTRIBUTE_ALLOW_LIST: dict[type, frozenset[str]] = {
    dict: frozenset({"get", "keys", "values", "items"}),
    list: frozenset({"index", "count"}),
    tuple: frozenset({"index", "count"}),
    str: _STR_METHODS,
    datetime: _DATETIME_ATTRS,
    date: frozenset({"year", "month", "day", "isoformat", "weekday", "isoweekday", "strftime"}),
    timedelta: frozenset({"days", "seconds", "total_seconds"}),
    _RE2_MATCH: frozenset({"group", "groups", "groupdict", "start", "end", "span"}),
}

__all__ = [
    "MAX_ELEMENTS",
    "MAX_STRING_LENGTH",
    "build_functions",
    "ATTRIBUTE_ALLOW_LIST",
    "STR_METHOD_WRAPPERS",
]
