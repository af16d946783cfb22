"""The allow-listed functions and module shims that task expressions may call.

Everything here takes and returns plain data. Functions that could build huge values check sizes first;
randomness and the clock are injected so workflow code stays deterministic.
"""

from __future__ import annotations

import base64 as _base64
import json as _json
import math as _math
import random as _random
import re as _re
import statistics as _statistics
import string as _string
import urllib.parse as _urlparse
from collections.abc import Callable
from datetime import UTC, date, timedelta
from datetime import datetime as _datetime
from typing import Any

import yaml as _yaml

MAX_STRING_LENGTH = 1_000_000
MAX_RANGE = 100_000
MAX_ELEMENTS = 1_000_000
MAX_POWER_RESULT_BITS = 100_000


class SafeNamespace:
    """A module shim: attribute access returns only the members it was built with."""

    def __init__(self, name: str, **members: Any):
        self._name = name
        self._members = members

    def get(self, attr: str) -> Any:
        if attr not in self._members:
            raise AttributeError(f"{self._name}.{attr} is not available")
        return self._members[attr]

    def __iter__(self):
        return iter(self._members)

    def __repr__(self) -> str:
        return f"<{self._name}>"


def bounded_size(value: Any, limit: int = MAX_ELEMENTS) -> int:
    """Count elements and characters in `value`, raising ValueError past `limit` (shared refs count each time)."""
    count = 0
    stack = [value]
    while stack:
        item = stack.pop()
        count += 1
        if isinstance(item, str | bytes):
            count += len(item) // 8
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend(item)
        if count > limit:
            raise ValueError(f"value is too large (over {limit} elements)")
    return count


def _check_text(text: str) -> str:
    if len(text) > MAX_STRING_LENGTH:
        raise ValueError(f"string longer than {MAX_STRING_LENGTH} characters")
    return text


def safe_range(*args: int) -> range:
    result = range(*args)
    if len(result) > MAX_RANGE:
        raise ValueError(f"range of {len(result)} items is over the limit of {MAX_RANGE}")
    return result


def safe_power(base: Any, exponent: Any) -> Any:
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and base not in (0, 1, -1):
        if abs(base).bit_length() * exponent > MAX_POWER_RESULT_BITS:
            raise ValueError(f"{base} ** {exponent} is too large")
    return base**exponent


def dump_json(value: Any, indent: int | None = None) -> str:
    bounded_size(value)
    return _check_text(_json.dumps(value, indent=indent, default=str, ensure_ascii=False))


def load_json(text: str) -> Any:
    return _json.loads(_check_text(text))


def dump_yaml(value: Any) -> str:
    bounded_size(value)
    return _check_text(_yaml.safe_dump(value, sort_keys=False, allow_unicode=True))


def load_yaml(text: str) -> Any:
    # safe_load builds only plain data; alias expansion is bounded by the size check after loading.
    loaded = _yaml.safe_load(_check_text(text))
    bounded_size(loaded)
    return loaded


def safe_str(value: Any = "") -> str:
    bounded_size(value)
    return _check_text(str(value))


def safe_join(separator: str, items: Any) -> str:
    return _check_text(separator.join(items))


def _b64encode(text: str | bytes) -> str:
    data = text.encode() if isinstance(text, str) else text
    return _base64.b64encode(data).decode()


def _b64decode(text: str) -> str:
    return _base64.b64decode(text).decode(errors="replace")


def _randint_factory(rng: _random.Random) -> Callable[..., int]:
    def randint(a: int, b: int | None = None) -> int:
        """randint(n) picks from range(n) (the seed's usage); randint(a, b) is Python's inclusive form."""
        if b is None:
            return rng.randrange(a)
        return rng.randint(a, b)

    return randint


def _regex(name: str) -> Callable[..., Any]:
    func = getattr(_re, name)

    def call(pattern: str, text: str, *args: Any) -> Any:
        _check_text(text)
        return func(pattern, text, *args)

    call.__name__ = name
    return call


def build_functions(rng: _random.Random) -> dict[str, Any]:
    """The functions callable by name in expressions."""
    return {
        "len": len,
        "str": safe_str,
        "int": int,
        "float": float,
        "bool": bool,
        "list": list,
        "dict": dict,
        "set": set,
        "tuple": tuple,
        "sum": sum,
        "min": min,
        "max": max,
        "abs": abs,
        "round": round,
        "sorted": sorted,
        "reversed": lambda xs: list(reversed(xs)),
        "enumerate": enumerate,
        "zip": zip,
        "map": map,
        "filter": filter,
        "range": safe_range,
        "any": any,
        "all": all,
        "pow": safe_power,
        "divmod": divmod,
        "isinstance": _isinstance,
        "load_json": load_json,
        "dump_json": dump_json,
        "load_yaml": load_yaml,
        "dump_yaml": dump_yaml,
        "search_regex": _regex("search"),
        "match_regex": _regex("match"),
        "randint": _randint_factory(rng),
        "random": rng.random,
        "choice": rng.choice,
        "sample": rng.sample,
        "shuffle": lambda xs: rng.sample(list(xs), len(xs)),
        "join": safe_join,
    }


def _isinstance(value: Any, kind: Any) -> bool:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return isinstance(value, tuple(k for k in kinds if k in _TYPES))


_TYPES = (str, int, float, bool, list, dict, set, tuple)


def safe_add(a: Any, b: Any) -> Any:
    if hasattr(a, "__len__") and hasattr(b, "__len__") and len(a) + len(b) > MAX_STRING_LENGTH:
        raise ValueError(f"result longer than {MAX_STRING_LENGTH}")
    return a + b


def safe_mult(a: Any, b: Any) -> Any:
    for seq, times in ((a, b), (b, a)):
        if hasattr(seq, "__len__") and isinstance(times, int) and times * len(seq) > MAX_STRING_LENGTH:
            raise ValueError(f"result longer than {MAX_STRING_LENGTH}")
    return a * b


def _str_replace(text: str) -> Callable[..., str]:
    def replace(old: str, new: str, count: int = -1) -> str:
        hits = text.count(old) if count < 0 else min(count, text.count(old))
        if len(text) + hits * max(len(new) - len(old), 0) > MAX_STRING_LENGTH:
            raise ValueError(f"result longer than {MAX_STRING_LENGTH}")
        return text.replace(old, new, count)

    return replace


# str methods whose result size depends on their arguments are wrapped with a size check.
STR_METHOD_WRAPPERS: dict[str, Callable[[str], Callable[..., Any]]] = {
    "join": lambda sep: lambda items: safe_join(sep, items),
    "replace": _str_replace,
}


def build_modules(rng: _random.Random, now: Callable[[], _datetime]) -> dict[str, SafeNamespace]:
    """Module shims available by name: `json.dumps(x)`, `math.sqrt(2)`, `datetime.now()` and so on."""

    def utcnow() -> _datetime:
        return now().astimezone(UTC)

    datetime_class = SafeNamespace(
        "datetime.datetime",
        now=utcnow,
        utcnow=utcnow,
        fromisoformat=_datetime.fromisoformat,
        fromtimestamp=lambda ts: _datetime.fromtimestamp(ts, UTC),
    )
    return {
        "json": SafeNamespace("json", dumps=dump_json, loads=load_json),
        "yaml": SafeNamespace(
            "yaml", dump=dump_yaml, safe_dump=dump_yaml, load=load_yaml, safe_load=load_yaml
        ),
        "re": SafeNamespace(
            "re",
            search=_regex("search"),
            match=_regex("match"),
            fullmatch=_regex("fullmatch"),
            findall=_regex("findall"),
            split=_regex("split"),
            escape=_re.escape,
            sub=lambda pattern, repl, text, count=0: _check_text(
                _re.sub(pattern, repl, _check_text(text), count=count)
            ),
            IGNORECASE=_re.IGNORECASE,
            MULTILINE=_re.MULTILINE,
            DOTALL=_re.DOTALL,
        ),
        "math": SafeNamespace(
            "math",
            **{
                n: getattr(_math, n)
                for n in (
                    "sqrt",
                    "floor",
                    "ceil",
                    "log",
                    "log2",
                    "log10",
                    "exp",
                    "sin",
                    "cos",
                    "tan",
                    "atan2",
                    "fabs",
                    "isclose",
                    "isfinite",
                    "isnan",
                    "gcd",
                    "pi",
                    "e",
                    "inf",
                    "nan",
                    "trunc",
                    "hypot",
                )
            },
            pow=safe_power,
        ),
        "statistics": SafeNamespace(
            "statistics",
            **{
                n: getattr(_statistics, n)
                for n in (
                    "mean",
                    "median",
                    "mode",
                    "stdev",
                    "pstdev",
                    "variance",
                    "pvariance",
                    "fmean",
                    "multimode",
                )
            },
        ),
        "datetime": SafeNamespace(
            "datetime",
            now=utcnow,
            utcnow=utcnow,
            fromisoformat=_datetime.fromisoformat,
            datetime=datetime_class,
            timedelta=timedelta,
            timezone=SafeNamespace("timezone", utc=UTC),
            date=SafeNamespace("date", today=lambda: utcnow().date(), fromisoformat=date.fromisoformat),
        ),
        "string": SafeNamespace(
            "string",
            **{
                n: getattr(_string, n)
                for n in (
                    "ascii_letters",
                    "ascii_lowercase",
                    "ascii_uppercase",
                    "digits",
                    "hexdigits",
                    "punctuation",
                    "whitespace",
                    "capwords",
                )
            },
        ),
        "base64": SafeNamespace("base64", b64encode=_b64encode, b64decode=_b64decode),
        "urllib": SafeNamespace(
            "urllib",
            parse=SafeNamespace(
                "urllib.parse",
                **{
                    n: getattr(_urlparse, n)
                    for n in (
                        "quote",
                        "unquote",
                        "quote_plus",
                        "unquote_plus",
                        "urlencode",
                        "parse_qs",
                        "urljoin",
                    )
                },
                urlparse=lambda url: _urlparse.urlparse(url)._asdict(),
            ),
        ),
        "random": SafeNamespace(
            "random",
            random=rng.random,
            randint=rng.randint,
            choice=rng.choice,
            sample=rng.sample,
            uniform=rng.uniform,
        ),
    }


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
    _datetime: _DATETIME_ATTRS,
    date: frozenset({"year", "month", "day", "isoformat", "weekday", "isoweekday", "strftime"}),
    timedelta: frozenset({"days", "seconds", "total_seconds"}),
    _re.Match: frozenset({"group", "groups", "groupdict", "start", "end", "span"}),
}
