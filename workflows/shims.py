"""Module shims for expressions and templates: `json.dumps(x)`, `math.sqrt(2)`, `datetime.now()` and so on.

Each shim exposes a fixed list of members (nothing else is reachable through it); the clock and randomness
come from the workflow, and `re` is RE2.
"""

from __future__ import annotations

import base64 as _base64
import math as _math
import random as _random
import statistics as _statistics
import string as _string
import urllib.parse as _urlparse
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any

import re2

from workflows.safe_functions import (
    C_SPEED,
    STATISTICS_PER_VALUE,
    charged,
    dump_json,
    dump_yaml,
    load_json,
    load_yaml,
    regex,
    regex_sub,
)
from workflows.safe_values import Budget, big_ints_units, check_text, int_units, safe_power


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


CLOCK_UNITS = 16


def _pick(module: Any, names: str) -> dict[str, Any]:
    return {name: getattr(module, name) for name in names.split()}


def _b64encode(text: str | bytes) -> str:
    return check_text(_base64.b64encode(text.encode() if isinstance(text, str) else text).decode())


def _b64decode(text: str) -> str:
    return _base64.b64decode(check_text(text)).decode(errors="replace")


def build_modules(
    rng: _random.Random, now: Callable[[], datetime], budget: Budget
) -> dict[str, SafeNamespace]:
    """The shims by name, bound to this execution's clock, randomness and work budget."""

    def utcnow() -> datetime:
        budget.charge(CLOCK_UNITS)  # time zone arithmetic in Python code
        return now().astimezone(UTC)

    def c(func: Callable[..., Any], per_item: float = C_SPEED) -> Callable[..., Any]:
        return charged(budget, func, per_item)

    def exact(func: Callable[..., Any]) -> Callable[..., Any]:
        def call(data: Any, *args: Any) -> Any:
            budget.charge(big_ints_units(data, product=True))  # fractions of big integers
            return func(data, *args)

        return call

    def gcd(*numbers: int) -> int:
        budget.charge(
            sum(int_units(n, n, product=True) for n in numbers) // 16
        )  # Lehmer's: quadratic, but quick
        return _math.gcd(*numbers)

    def text_out(func: Callable[..., Any]) -> Callable[..., Any]:
        return lambda *args, **kwargs: check_text(func(*args, **kwargs))  # quoting may triple a string

    datetime_class = SafeNamespace(
        "datetime.datetime",
        now=utcnow,
        utcnow=utcnow,
        fromisoformat=datetime.fromisoformat,
        fromtimestamp=lambda ts: datetime.fromtimestamp(ts, UTC),
    )
    url_parse = SafeNamespace(
        "urllib.parse",
        **{
            k: c(text_out(v), 1 / 8)
            for k, v in _pick(_urlparse, "quote unquote quote_plus unquote_plus").items()
        },
        urlencode=c(text_out(_urlparse.urlencode), 4),  # Python code per pair
        parse_qs=c(_urlparse.parse_qs, 1),
        urljoin=c(text_out(_urlparse.urljoin), 1 / 16),
        urlparse=c(lambda url: _urlparse.urlparse(check_text(url))._asdict(), 1 / 16),
    )
    statistics = _pick(_statistics, "mean median mode stdev pstdev variance pvariance fmean multimode")
    return {
        # These charge by what they read or write.
        "json": SafeNamespace("json", dumps=c(dump_json, 0), loads=c(load_json, 0)),
        "yaml": SafeNamespace(
            "yaml",
            dump=c(dump_yaml, 0),
            safe_dump=c(dump_yaml, 0),
            load=c(load_yaml, 0),
            safe_load=c(load_yaml, 0),
        ),
        "re": SafeNamespace(
            "re",
            **{name: regex(name, budget) for name in ("search", "match", "fullmatch", "findall", "split")},
            sub=regex_sub(budget),
            escape=c(text_out(re2.escape), 1 / 16),
        ),
        "math": SafeNamespace(
            "math",
            **_pick(
                _math,
                "sqrt floor ceil log log2 log10 exp sin cos tan atan2 fabs isclose isfinite isnan "
                "pi e inf nan trunc hypot",
            ),
            pow=safe_power,
            gcd=gcd,
        ),
        # Python code, exact fractions included.
        "statistics": SafeNamespace(
            "statistics", **{k: c(exact(v), STATISTICS_PER_VALUE) for k, v in statistics.items()}
        ),
        "datetime": SafeNamespace(
            "datetime",
            now=utcnow,
            utcnow=utcnow,
            fromisoformat=datetime.fromisoformat,
            datetime=datetime_class,
            timedelta=timedelta,
            timezone=SafeNamespace("timezone", utc=UTC),
            date=SafeNamespace("date", today=lambda: utcnow().date(), fromisoformat=date.fromisoformat),
        ),
        "string": SafeNamespace(
            "string",
            **_pick(
                _string,
                "ascii_letters ascii_lowercase ascii_uppercase digits hexdigits punctuation whitespace",
            ),
            capwords=c(_string.capwords, 1 / 8),
        ),
        "base64": SafeNamespace("base64", b64encode=c(_b64encode, 1 / 64), b64decode=c(_b64decode, 1 / 64)),
        "urllib": SafeNamespace("urllib", parse=url_parse),
        "random": SafeNamespace(
            "random",
            random=rng.random,
            randint=rng.randint,
            choice=c(rng.choice, 0),
            sample=c(rng.sample),
            uniform=rng.uniform,
        ),
    }
