"""The functions task expressions and templates may call, and the attributes they may read.

Every function takes and returns plain data, charges the execution's work budget by the size of its input,
and checks the size of what it would build before building it. Randomness comes from the workflow.
Regular expressions use RE2 (linear time, no backreferences or lookarounds): a pattern cannot hang a worker.
"""

from __future__ import annotations

import json as _json
import random as _random
from collections.abc import Callable
from datetime import date, datetime, timedelta
from typing import Any

import re2
import yaml as _yaml

from workflows.safe_values import (
    MAX_ELEMENTS,
    MAX_STRING_LENGTH,
    Budget,
    LimitExceeded,
    OrderedSet,
    bounded_size,
    check_length,
    check_text,
    safe_power,
    safe_str,
)

MAX_INDENT = 16
_YAML_LOADER = getattr(_yaml, "CSafeLoader", _yaml.SafeLoader)
_YAML_DUMPER = getattr(_yaml, "CSafeDumper", _yaml.SafeDumper)


def _size(value: Any) -> int:
    return len(value) if hasattr(value, "__len__") else 1


def charged(budget: Budget, func: Callable[..., Any]) -> Callable[..., Any]:
    """`func`, charging the budget the size of its arguments first (a builtin runs at C speed, but not free)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        budget.charge(1 + sum(_size(a) for a in args))
        return func(*args, **kwargs)

    call.__name__ = getattr(func, "__name__", "function")
    return call


def eager(func: Callable[..., Any]) -> Callable[..., list[Any]]:
    """map/filter/zip/enumerate as lists: a lazy iterator would slip past the budget."""
    return lambda *args: list(func(*args))


def dump_json(value: Any, indent: int | None = None) -> str:
    bounded_size(value)
    indent = None if indent is None else max(0, min(int(indent), MAX_INDENT))
    return check_text(_json.dumps(value, indent=indent, ensure_ascii=False, allow_nan=False))


def load_json(text: str) -> Any:
    return _json.loads(check_text(text))


def dump_yaml(value: Any) -> str:
    bounded_size(value)
    return check_text(_yaml.dump(value, Dumper=_YAML_DUMPER, sort_keys=False, allow_unicode=True))


def load_yaml(text: str) -> Any:
    # The safe loader builds only plain data; aliases can still multiply it, hence the size check after.
    loaded = _yaml.load(check_text(text), Loader=_YAML_LOADER)  # noqa: S506 - a safe loader
    bounded_size(loaded)
    return loaded


def safe_join(separator: str, items: Any) -> str:
    items = list(items)
    check_length(sum(len(i) for i in items if isinstance(i, str)) + len(separator) * max(len(items) - 1, 0))
    return separator.join(items)


def _str_replace(text: str) -> Callable[..., str]:
    def replace(old: str, new: str, count: int = -1) -> str:
        hits = text.count(old) if count < 0 else min(count, text.count(old))
        check_length(len(text) + hits * max(len(new) - len(old), 0))
        return text.replace(old, new, count)

    return replace


# str methods whose result size depends on their arguments are wrapped with a size check.
STR_METHOD_WRAPPERS: dict[str, Callable[[str], Callable[..., Any]]] = {
    "join": lambda sep: lambda items: safe_join(sep, items),
    "replace": _str_replace,
}


def regex(name: str, budget: Budget) -> Callable[..., Any]:
    """An RE2 function (search, match, fullmatch, findall, split, sub), charged by text length."""
    func = getattr(re2, name)

    def call(pattern: str, text: str, *args: Any) -> Any:
        budget.charge(len(pattern) + len(check_text(text)))
        return func(pattern, text, *args)

    call.__name__ = name
    return call


def regex_sub(budget: Budget) -> Callable[..., str]:
    def sub(pattern: str, replacement: str, text: str, count: int = 0) -> str:
        budget.charge(len(pattern) + 2 * len(check_text(text)))
        matches = sum(1 for _ in re2.finditer(pattern, text))
        check_length(len(text) + min(matches, count or matches) * len(replacement))
        return re2.sub(pattern, replacement, text, count=count)

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
    if len(result) > 100_000:
        raise LimitExceeded(f"range of {len(result)} items is over the limit of 100000")
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


def build_functions(rng: _random.Random, budget: Budget) -> dict[str, Any]:
    """The functions callable by name in expressions and templates."""
    c = lambda func: charged(budget, func)  # noqa: E731 - a local shorthand
    return {
        "len": len,
        "str": c(safe_str),
        "int": c(int),
        "float": float,
        "bool": bool,
        "abs": abs,
        "round": round,
        "pow": safe_power,
        "divmod": divmod,
        "isinstance": _isinstance,
        "list": c(list),
        "dict": c(dict),
        "set": c(_set),
        "tuple": c(tuple),
        "sum": c(sum),
        "min": c(min),
        "max": c(max),
        "any": c(any),
        "all": c(all),
        "sorted": c(_sorted),
        "reversed": c(lambda xs: list(reversed(xs))),
        "enumerate": c(eager(enumerate)),
        "zip": c(eager(zip)),
        "map": c(eager(map)),
        "filter": c(eager(filter)),
        "range": c(safe_range),
        "join": c(safe_join),
        "load_json": c(load_json),
        "dump_json": c(dump_json),
        "load_yaml": c(load_yaml),
        "dump_yaml": c(dump_yaml),
        "search_regex": regex("search", budget),
        "match_regex": regex("match", budget),
        "randint": _randint_factory(rng),
        "random": rng.random,
        "choice": c(rng.choice),
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
