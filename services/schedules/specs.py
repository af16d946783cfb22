"""Reading what a request says about when a schedule fires: durations (`30s`, `1h30m`), cron expressions,
timezones and overlap policies. Each check answers the problem in a sentence (None when all is well), so the
API can name the field it is about, and nothing invalid reaches Temporal."""

from __future__ import annotations

import re
import zoneinfo
from datetime import timedelta

OVERLAPS = ("skip", "buffer_one", "allow_all", "cancel_other")
SHORTEST_EVERY = timedelta(seconds=1)
# Temporal refuses a catchup window under ten seconds.
SHORTEST_CATCHUP = timedelta(seconds=10)
LONGEST = timedelta(days=3660)

_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
# Field name, lowest value, highest value, names allowed (cron's, as Temporal reads them).
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_FIELDS: tuple[tuple[str, int, int, tuple[str, ...]], ...] = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day of month", 1, 31, ()),
    ("month", 1, 12, _MONTHS),
    ("day of week", 0, 7, _DAYS),
)
_MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")


def parse_duration(text: str) -> timedelta:
    """`30s`, `5m`, `1h30m`, `2d`, `500ms` (units summed); a bare number is seconds. ValueError says why not."""
    text = text.strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        text += "s"
    if not text or _DURATION.sub("", text) != "":
        raise ValueError(f"{text!r} is no duration: write it like 30s, 5m, 1h30m or 2d")
    try:
        return timedelta(seconds=sum(float(n) * _UNITS[unit] for n, unit in _DURATION.findall(text)))
    except OverflowError:
        raise ValueError(f"{text[:40]!r} is too long a duration") from None


def duration_problem(text: str, shortest: timedelta) -> str | None:
    try:
        length = parse_duration(text)
    except ValueError as exc:
        return str(exc)
    if length < shortest:
        return f"{text!r} is shorter than the shortest allowed, {shortest.total_seconds():g}s"
    if length > LONGEST:
        return f"{text!r} is longer than the longest allowed, {LONGEST.days} days"
    return None


def timezone_problem(name: str) -> str | None:
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return f"{name!r} is no IANA timezone (such as Europe/Paris, America/New_York or UTC)"
    return None


def cron_problem(expression: str) -> str | None:
    """What is wrong with a five-field cron expression (minute hour day-of-month month day-of-week), or one
    of the @daily-style macros; None when nothing is."""
    text = expression.strip()
    if text.lower() in _MACROS:
        return None
    parts = text.split()
    if len(parts) != 5:
        return (
            f"{expression!r} has {len(parts)} fields; a cron has 5 (minute hour day-of-month month "
            "day-of-week, such as `0 9 * * 1-5`), or is one of " + ", ".join(_MACROS)
        )
    for part, (name, low, high, names) in zip(parts, _FIELDS, strict=True):
        problem = _field_problem(part.lower(), low, high, names)
        if problem:
            return f"{expression!r}: the {name} field {part!r} {problem}"
    return None


def _field_problem(field: str, low: int, high: int, names: tuple[str, ...]) -> str | None:
    for item in field.split(","):
        base, _, step = item.partition("/")
        if step and (not step.isdigit() or int(step) == 0):
            return f"has a step {step!r} that is no positive whole number"
        if base == "*":
            continue
        for bound in base.split("-", 1):
            value = names.index(bound) + low if bound in names else int(bound) if bound.isdigit() else None
            if value is None:
                return f"has {bound!r}, which is no number" + (
                    f" or name ({', '.join(names)})" if names else ""
                )
            if not low <= value <= high:
                return f"has {value}, outside {low}-{high}"
    return None
