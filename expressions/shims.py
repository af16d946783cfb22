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
import time as _time
import urllib.parse as _urlparse
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from datetime import time as dtime
from types import ModuleType
from typing import Any, Literal

from expressions import csv_rows, regex
from expressions.budget import MAX_FORMAT_WIDTH, Budget, LimitExceeded, big_ints_units, int_units
from expressions.data import charge_keys, check_length, check_text
from expressions.functions import (
    C_SPEED,
    STATISTICS_PER_VALUE,
    charged,
    dump_json,
    dump_yaml,
    load_json,
    load_yaml,
    random_functions,
)
from expressions.operators import safe_str


class SafeNamespace:
    """A module shim: attribute access returns only the members it was built with."""

    def __init__(self, name: str, **members: Any):
        self._name = name
        self._members = members

    def get(self, attr: str) -> Any:
        if attr not in self._members:
            raise AttributeError(f"{self._name}.{attr} is not available")
        return self._members[attr]

    def __iter__(self) -> Iterator[str]:
        return iter(self._members)

    def __repr__(self) -> str:
        return f"<{self._name}>"


class CallableNamespace(SafeNamespace):
    """A shim that is also called, as a class is (`datetime.date(2024, 5, 6)`, `datetime.date.today()`)."""

    def __init__(self, name: str, call: Callable[..., Any], **members: Any):
        super().__init__(name, **members)
        self._call = call
        self.mint_charged = getattr(call, "mint_charged", False)  # charged when `call` is

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(*args, **kwargs)


CLOCK_UNITS = 16
MAX_ISO_LENGTH = 64  # the longest ISO 8601 date-time Python reads is about 40 characters
MAX_SAFE_CHARACTERS = 128  # urllib caches a quoter per distinct `safe` argument, worker-wide
QUOTED_PER_BYTE = 3  # %XX
CASE_GROWTH = 3
MAX_QUERY_FIELDS = 10_000
MAX_QUANTILES = 10_000


def _pick(module: ModuleType, names: str) -> dict[str, Callable[..., Any]]:
    """The named functions of a module."""
    return {name: getattr(module, name) for name in names.split()}


def _utf8_length(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode(errors="surrogatepass"))


def _b64encode(text: str | bytes) -> str:
    data = text.encode() if isinstance(text, str) else text
    check_length(4 * (len(data) + 2) // 3)
    return _base64.b64encode(data).decode()


def _b64decode(text: str) -> str:
    return _base64.b64decode(check_text(text)).decode(errors="replace")


def _iso(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """fromisoformat, refusing text no date could be (Python's error would quote all of it)."""

    def fromisoformat(text: str) -> Any:
        if not isinstance(text, str) or len(text) > MAX_ISO_LENGTH:
            raise ValueError(f"not an ISO 8601 date: {str(text)[:MAX_ISO_LENGTH]!r}")
        return parse(text)

    return fromisoformat


def _quoting(quote: Callable[..., str]) -> Callable[..., str]:
    """quote/quote_plus: every byte may become `%XX`, checked before it is built."""

    def call(text: str, safe: str = "/", *args: Any) -> str:
        if len(safe) > MAX_SAFE_CHARACTERS:
            raise LimitExceeded(f"`safe` may list at most {MAX_SAFE_CHARACTERS} characters")
        check_length(QUOTED_PER_BYTE * _utf8_length(text))
        return quote(text, safe, *args)

    call.__name__ = quote.__name__
    return call


def _urlencode(query: Any, doseq: bool = False) -> str:
    """urlencode over plain data only, its result's length checked before it is built."""
    items = list(query.items()) if isinstance(query, dict) else list(query)
    pairs: list[tuple[str, str]] = []
    for key, value in items:
        values = value if doseq and isinstance(value, list | tuple) else [value]
        pairs.extend((safe_str(key), safe_str(v)) for v in values)
    check_length(sum(QUOTED_PER_BYTE * (_utf8_length(k) + _utf8_length(v)) + 2 for k, v in pairs))
    return _urlparse.urlencode(pairs)


def _urlsplit(url: str) -> dict[str, str]:
    return _urlparse.urlsplit(check_text(url))._asdict()


def _parse_qsl(query: str, keep_blank_values: bool = False) -> list[tuple[str, str]]:
    return _urlparse.parse_qsl(check_text(query), keep_blank_values, max_num_fields=MAX_QUERY_FIELDS)


def _quantiles(
    data: Any, *, n: int = 4, method: Literal["exclusive", "inclusive"] = "exclusive"
) -> list[float]:
    if not isinstance(n, int) or not 1 <= n <= MAX_QUANTILES:
        raise ValueError(f"n must be between 1 and {MAX_QUANTILES}")
    return _statistics.quantiles(data, n=n, method=method)


def _strftime(form: str, moment: Any = None) -> str:
    if not isinstance(form, str) or len(form) > MAX_FORMAT_WIDTH:
        raise LimitExceeded(f"a strftime format may be at most {MAX_FORMAT_WIDTH} characters")
    return _time.strftime(form, moment)


def _capwords(text: str, sep: str | None = None) -> str:
    check_length(len(text) * (1 if text.isascii() else CASE_GROWTH))  # capitalize may grow a character
    return _string.capwords(text, sep)


def build_modules(
    rng: _random.Random, now: Callable[[], datetime], budget: Budget
) -> dict[str, SafeNamespace]:
    """The shims by name, bound to this execution's clock, randomness and work budget. Every callable
    member charges for its work (constants are data); see functions.charged."""
    shims = _Shims(rng, now, budget)
    c = shims.charged
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
        "re": SafeNamespace("re", **{name: c(func, 0) for name, func in regex.FUNCTIONS.items()}),
        "math": shims.math(),
        "statistics": shims.statistics(),
        "datetime": shims.datetime(),
        "string": SafeNamespace(
            "string",
            **{
                name: str(getattr(_string, name))
                for name in (
                    "ascii_letters ascii_lowercase ascii_uppercase digits hexdigits octdigits punctuation "
                    "printable whitespace"
                ).split()
            },
            capwords=c(_capwords, 1 / 8),
        ),
        "base64": SafeNamespace("base64", b64encode=c(_b64encode, 1 / 64), b64decode=c(_b64decode, 1 / 64)),
        "urllib": SafeNamespace("urllib", parse=_url_parse(c)),
        "csv": _csv_module(c),
        "time": SafeNamespace(
            "time",
            time=c(lambda: now().timestamp(), 0),
            strftime=c(lambda form, moment=None: _strftime(form, moment or now().utctimetuple()), 1 / 2),
        ),
        "random": shims.random(),
    }


class _Shims:
    """The shims that need the execution's clock, randomness or budget, one method per module."""

    def __init__(self, rng: _random.Random, now: Callable[[], datetime], budget: Budget):
        self.rng = rng
        self.now = now
        self.budget = budget

    def charged(self, func: Callable[..., Any], per_item: float = C_SPEED) -> Callable[..., Any]:
        return charged(self.budget, func, per_item)

    def utcnow(self) -> datetime:
        self.budget.charge(CLOCK_UNITS)  # time zone arithmetic in Python code
        return self.now().astimezone(UTC)

    def datetime(self) -> SafeNamespace:
        c = self.charged
        now = c(self.utcnow, 0)
        date_class = CallableNamespace(
            "date",
            c(date, 0),
            today=c(lambda: self.utcnow().date(), 0),
            fromisoformat=c(_iso(date.fromisoformat), 0),
        )
        datetime_members = {
            "now": now,
            "utcnow": now,
            "fromisoformat": c(_iso(datetime.fromisoformat), 0),
            "fromtimestamp": c(lambda ts: datetime.fromtimestamp(ts, UTC), 0),
        }
        # Julep's `datetime.datetime` held now, and the classes: `datetime.datetime.datetime(2024, 5, 6)`.
        datetime_class = SafeNamespace(
            "datetime.datetime",
            **datetime_members,
            datetime=CallableNamespace("datetime", c(datetime, 0), **datetime_members),
            date=date_class,
            time=c(dtime, 0),
            timedelta=c(timedelta, 0),
        )
        return SafeNamespace(
            "datetime",
            now=now,
            utcnow=now,
            fromisoformat=c(_iso(datetime.fromisoformat), 0),
            datetime=datetime_class,
            timedelta=c(timedelta, 0),
            timezone=SafeNamespace("timezone", utc=UTC),
            date=date_class,
            time=c(dtime, 0),
        )

    def math(self) -> SafeNamespace:
        functions = _pick(
            _math,
            "sqrt floor ceil log log2 log10 exp sin cos tan asin acos atan atan2 fabs isclose isfinite isinf isnan "
            "trunc hypot pow",  # math.pow is float arithmetic, as Python's (pow() is the exact one)
        )
        return SafeNamespace(
            "math",
            **{
                name: self.charged(func) for name, func in functions.items()
            },  # float arithmetic: a call's worth
            pi=_math.pi,
            e=_math.e,
            inf=_math.inf,
            nan=_math.nan,
            gcd=self.charged(self.gcd, 0),
        )

    def gcd(self, *numbers: int) -> int:
        # Lehmer's: quadratic, but quick
        self.budget.charge(sum(int_units(n, n, product=True) for n in numbers) // 16)
        return _math.gcd(*numbers)

    def statistics(self) -> SafeNamespace:
        """Python code, exact fractions included."""
        functions = _pick(
            _statistics,
            "mean median median_low median_high mode stdev pstdev variance pvariance fmean multimode geometric_mean",
        )
        functions["quantiles"] = _quantiles
        return SafeNamespace(
            "statistics",
            **{k: self.charged(self.exact(v), STATISTICS_PER_VALUE) for k, v in functions.items()},
        )

    def exact(self, func: Callable[..., Any]) -> Callable[..., Any]:
        def call(data: Any, *args: Any, **kwargs: Any) -> Any:
            self.budget.charge(big_ints_units(data, product=True))  # fractions of big integers
            charge_keys(data)  # mode and multimode count values in a dict
            return func(data, *args, **kwargs)

        return call

    def random(self) -> SafeNamespace:
        c, rng = self.charged, self.rng
        randoms = random_functions(rng)
        return SafeNamespace(
            "random",
            random=c(rng.random, 0),
            randint=c(randoms["randint"], 0),
            choice=c(rng.choice, 0),
            sample=c(randoms["sample"], 0),
            uniform=c(rng.uniform, 0),
        )


def _url_parse(c: Callable[..., Callable[..., Any]]) -> SafeNamespace:
    return SafeNamespace(
        "urllib.parse",
        quote=c(_quoting(_urlparse.quote), 1 / 8),
        quote_plus=c(_quoting(_urlparse.quote_plus), 1 / 8),
        unquote=c(_urlparse.unquote, 1 / 8),  # these shrink text, never grow it
        unquote_plus=c(_urlparse.unquote_plus, 1 / 8),
        urlencode=c(_urlencode, 4),  # Python code per pair
        parse_qs=c(_urlparse.parse_qs, 1),
        parse_qsl=c(_parse_qsl, 1),
        urljoin=c(_urlparse.urljoin, 1 / 16),
        urlparse=c(lambda url: _urlparse.urlparse(check_text(url))._asdict(), 1 / 16),
        urlsplit=c(_urlsplit, 1 / 16),
    )


def _csv_module(c: Callable[..., Callable[..., Any]]) -> SafeNamespace:
    """Julep's csv (see csv_rows.py): readers and writers over strings, dialects by name."""
    return SafeNamespace(
        "csv",
        reader=c(csv_rows.reader, 0),  # these charge by what they read and write
        DictReader=c(csv_rows.dict_reader, 0),
        writer=c(csv_rows.Writer, 0),
        DictWriter=c(csv_rows.DictWriter, 0),
        get_dialect=c(csv_rows.get_dialect, 0),
        list_dialects=c(lambda: list(csv_rows.DIALECTS), 0),
        field_size_limit=c(csv_rows.field_size_limit, 0),
        excel="excel",
        excel_tab="excel-tab",
        unix_dialect="unix",
        **csv_rows.QUOTING,
        **csv_rows.QUOTING_312,
    )
