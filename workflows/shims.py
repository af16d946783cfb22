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

from workflows.safe_functions import charged, dump_json, dump_yaml, load_json, load_yaml, regex, regex_sub
from workflows.safe_values import Budget, check_text, safe_power


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


def _pick(module: Any, names: str) -> dict[str, Any]:
    return {name: getattr(module, name) for name in names.split()}


def _b64encode(text: str | bytes) -> str:
    return _base64.b64encode(text.encode() if isinstance(text, str) else text).decode()


def _b64decode(text: str) -> str:
    return _base64.b64decode(check_text(text)).decode(errors="replace")


def build_modules(
    rng: _random.Random, now: Callable[[], datetime], budget: Budget
) -> dict[str, SafeNamespace]:
    """The shims by name, bound to this execution's clock, randomness and work budget."""

    def utcnow() -> datetime:
        return now().astimezone(UTC)

    def c(func: Callable[..., Any]) -> Callable[..., Any]:
        return charged(budget, func)

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
            k: c(v)
            for k, v in _pick(
                _urlparse, "quote unquote quote_plus unquote_plus urlencode parse_qs urljoin"
            ).items()
        },
        urlparse=lambda url: _urlparse.urlparse(check_text(url))._asdict(),
    )
    statistics = _pick(_statistics, "mean median mode stdev pstdev variance pvariance fmean multimode")
    return {
        "json": SafeNamespace("json", dumps=c(dump_json), loads=c(load_json)),
        "yaml": SafeNamespace(
            "yaml", dump=c(dump_yaml), safe_dump=c(dump_yaml), load=c(load_yaml), safe_load=c(load_yaml)
        ),
        "re": SafeNamespace(
            "re",
            **{name: regex(name, budget) for name in ("search", "match", "fullmatch", "findall", "split")},
            sub=regex_sub(budget),
            escape=c(re2.escape),
        ),
        "math": SafeNamespace(
            "math",
            **_pick(
                _math,
                "sqrt floor ceil log log2 log10 exp sin cos tan atan2 fabs isclose isfinite isnan "
                "gcd pi e inf nan trunc hypot",
            ),
            pow=safe_power,
        ),
        "statistics": SafeNamespace("statistics", **{k: c(v) for k, v in statistics.items()}),
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
            capwords=c(_string.capwords),
        ),
        "base64": SafeNamespace("base64", b64encode=c(_b64encode), b64decode=c(_b64decode)),
        "urllib": SafeNamespace("urllib", parse=url_parse),
        "random": SafeNamespace(
            "random",
            random=rng.random,
            randint=rng.randint,
            choice=c(rng.choice),
            sample=c(rng.sample),
            uniform=rng.uniform,
        ),
    }
