"""Jinja's filters and tests as templates get them: each charged for its work, and size-checked before it
builds anything larger than its input.

Every filter and test Jinja ships is named in one of the tables below, which say what it costs; a filter or
test a new Jinja adds is in none of them, and fails tests/test_sandbox_reach.py until someone decides. Filters
that read text read plain data printed within the size limit, never a collection's unbounded repr.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any, cast

import jinja2
from jinja2.filters import make_attrgetter

from expressions.budget import (
    CHARS_PER_UNIT,
    ELEMENTS_PER_UNIT,
    MAX_FORMAT_WIDTH,
    MAX_RANGE,
    SCANS_PER_UNIT,
    SQUARE_BITS,
    LimitExceeded,
    charge,
    int_units,
)
from expressions.data import OrderedSet, bounded_size, charge_keys, check_length
from expressions.functions import dump_json, safe_replace, safe_sum
from expressions.operators import safe_mod, safe_round, safe_str

FILTER_UNITS = 3
CASE_GROWTH = 3  # a Unicode case mapping turns a character into at most three
ESCAPE_GROWTH = 4  # `&` becomes `&amp;`, `"` becomes `&#34;`
URL_LINK_CHARS = 60  # the markup urlize puts around a link, besides the link twice over
MAX_INT_DIGITS = 4_300  # Python's int() refuses longer decimal text


def _text(value: Any) -> Any:
    """A filter's text: a string as is (Markup too), anything else printed as plain data within the limit
    (an undefined value stays itself, to raise its own error where it is used)."""
    return value if isinstance(value, str | jinja2.Undefined) else safe_str(value)


# Checks made before a filter runs, on its value and arguments (growth past the input's size) --------------


def _case(text: str, *args: Any, **kwargs: Any) -> None:
    check_length(len(text) if text.isascii() else len(text) * CASE_GROWTH)


def _escape(text: str, *args: Any, **kwargs: Any) -> None:
    specials = sum(map(text.count, "&<>'\""))
    charge(5 * len(text) // CHARS_PER_UNIT)
    check_length(len(text) + ESCAPE_GROWTH * specials)


def _trim(text: str, chars: Any = None) -> None:
    width = len(chars) // CHARS_PER_UNIT if isinstance(chars, str) else 0
    charge(len(text) * width // CHARS_PER_UNIT)  # each character stripped is looked up in `chars`


def _wordwrap(text: str, width: int = 79, long: bool = True, wrapstring: Any = None, *rest: Any) -> None:
    check_length(len(text) * (1 + len(_text(wrapstring or "\n"))))


def _urlize(text: str, limit: Any = None, nofollow: bool = False, target: Any = None, rel: Any = None,
            extra_schemes: Any = None) -> None:  # fmt: skip
    extra = len(_text(target or "")) + len(_text(rel or ""))
    check_length(3 * len(text) + (len(text) // 4 + 1) * (URL_LINK_CHARS + extra))


def _urlencode(value: Any) -> None:
    if isinstance(value, str):
        check_length(3 * len(value.encode(errors="surrogatepass")))
        return
    items = value.items() if isinstance(value, dict) else value
    length = sum(12 * (len(_text(k)) + len(_text(v))) + 2 for k, v in items)  # %XX for each UTF-8 byte
    check_length(length)


def _int(value: Any, *args: Any, **kwargs: Any) -> None:
    if isinstance(value, str):  # decimal text converts in quadratic time, up to Python's 4,300 digits
        bits = 4 * min(len(value), MAX_INT_DIGITS)
        charge(bits * bits // SQUARE_BITS)


def _xmlattr(value: Any, *args: Any) -> None:
    items = value.items() if isinstance(value, dict) else ()
    check_length(sum((1 + ESCAPE_GROWTH) * (len(_text(k)) + len(_text(v))) + 4 for k, v in items))


# Text filters: the value read as text (see _text), charged per character, checked for growth.
TEXT_FILTERS: dict[str, tuple[float, Callable[..., None] | None]] = {
    "upper": (1 / CHARS_PER_UNIT, _case),
    "lower": (1 / CHARS_PER_UNIT, _case),
    "capitalize": (1 / CHARS_PER_UNIT, _case),
    "title": (1, _case),  # a regex split and a capitalize per word, in Python
    "escape": (1 / CHARS_PER_UNIT, _escape),
    "e": (1 / CHARS_PER_UNIT, _escape),
    "forceescape": (1 / CHARS_PER_UNIT, _escape),
    "trim": (1 / CHARS_PER_UNIT, _trim),
    "wordwrap": (2, _wordwrap),  # textwrap, in Python
    "urlize": (2, _urlize),  # regexes per word, in Python
    "striptags": (1 / 4, None),
    "wordcount": (1 / 4, None),  # a list of the words, then its length
    "truncate": (1 / CHARS_PER_UNIT, None),
    "safe": (1 / CHARS_PER_UNIT, None),
}
# Filters that walk their value in Python code, in units per element (a string counts per character at a
# quarter of that); some call another filter or test, or an attribute getter, per element.
ITERATING_FILTERS = {
    **dict.fromkeys(["batch", "items", "reverse", "slice", "sum", "list"], 1),
    **dict.fromkeys(["xmlattr"], 2),
    **dict.fromkeys(["groupby", "join", "sort", "dictsort", "max", "min", "unique"], 3),
    **dict.fromkeys(["map", "reject", "rejectattr", "select", "selectattr"], 6),
}
# Filters that compare or hash their elements: comparing nested values walks them, so the value is walked
# (and charged) first, a generator made a list for it.
COMPARING_FILTERS = frozenset({"dictsort", "groupby", "max", "min", "sort", "unique"})
# Filters whose result is no larger than their input and whose work is a pass over it (or less).
BOUNDED_FILTERS = frozenset(
    {"abs", "count", "d", "default", "first", "last", "length", "float", "int", "filesizeformat", "items"}
)
CHECKED_FILTERS = {"urlencode": _urlencode, "xmlattr": _xmlattr, "int": _int}


# Filters replaced by bounded versions ---------------------------------------------------------------------


def _center(text: Any, width: int = 80) -> str:
    if width > MAX_FORMAT_WIDTH:
        raise LimitExceeded(f"center width {width} is over {MAX_FORMAT_WIDTH}")
    return cast(str, _text(text).center(width))  # Markup stays Markup


def _indent(text: Any, width: int | str = 4, first: bool = False, blank: bool = False) -> str:
    if not isinstance(width, str) and int(width) > MAX_FORMAT_WIDTH:
        raise LimitExceeded(f"indent width {width} is over {MAX_FORMAT_WIDTH}")
    text = _text(text)
    pad = width if isinstance(width, str) else " " * int(width)
    check_length(len(text) + len(pad) * (text.count("\n") + 1))
    return jinja2.filters.do_indent(text, pad, first, blank)


def _join(items: Iterable[Any], separator: str = "", attribute: Any = None) -> str:
    if attribute is not None:
        raise LimitExceeded("join(attribute=...) is not supported; map the attribute first")
    texts, length = [], 0
    for i, item in enumerate(items):
        for part in (separator, item) if i else (item,):
            text = part if type(part) is str else safe_str(part)
            length += len(text)
            check_length(length)
            texts.append(text)
    charge(length // CHARS_PER_UNIT)
    return "".join(texts)


def _replace(text: Any, old: str, new: str, count: int | None = None) -> str:
    return safe_replace(str(_text(text)), old, new, -1 if count is None else count)


def _round(value: Any, precision: int = 0, method: str = "common") -> Any:
    if abs(precision) > MAX_FORMAT_WIDTH:
        raise LimitExceeded(f"round to {precision} digits is over the limit of {MAX_FORMAT_WIDTH}")
    if method == "common":
        return safe_round(value, precision)
    return jinja2.filters.do_round(value, precision, method)  # type: ignore[arg-type]


def _batch(items: Iterable[Any], count: int, fill_with: Any = None) -> Any:
    if count > MAX_RANGE:
        raise LimitExceeded(f"batch of {count} is over the limit of {MAX_RANGE}")
    charge(count // ELEMENTS_PER_UNIT if fill_with is not None else 0)
    return jinja2.filters.do_batch(items, count, fill_with)


def _slice(items: Any, count: int, fill_with: Any = None) -> Any:
    if count > MAX_RANGE:
        raise LimitExceeded(f"slice into {count} is over the limit of {MAX_RANGE}")
    charge(count)
    return jinja2.filters.sync_do_slice(items, count, fill_with)


def _tojson(value: Any, indent: int | None = None) -> Any:
    dumps = functools.partial(dump_json, indent=indent, sort_keys=True, ensure_ascii=True)
    return jinja2.utils.htmlsafe_json_dumps(value, dumps=lambda v, **_: dumps(v))


def _pprint(value: Any) -> str:
    charge(bounded_size(value) * 3)  # pprint formats in Python code
    return jinja2.filters.do_pprint(value)


@jinja2.pass_environment
def _sum(environment: Any, iterable: Iterable[Any], attribute: Any = None, start: Any = 0) -> Any:
    """sum, whose `start=[]` adds lists (copying the total each time), as safe_sum charges it."""
    items = list(iterable)
    if attribute is not None:
        items = list(map(make_attrgetter(environment, attribute), items))
    return safe_sum(items, start)


@jinja2.pass_environment
def _attr(environment: Any, obj: Any, name: str) -> Any:
    """attr: the same attribute rules as `obj.name` (Jinja's own reads any attribute the sandbox allows)."""
    return environment.getattr(obj, name)


REPLACED_FILTERS: dict[str, Callable[..., Any]] = {
    "center": _center,
    "indent": _indent,
    "format": lambda text, *args: safe_mod(_text(text), args),
    "join": _join,
    "replace": _replace,
    "round": _round,
    "batch": _batch,
    "slice": _slice,
    "tojson": _tojson,
    "pprint": _pprint,
    "string": safe_str,
    "sum": _sum,
    "attr": _attr,
}
# Jinja's `random` uses Python's own generator, which a replay would not repeat (`random.choice(xs)` uses
# Temporal's).
REMOVED_FILTERS = frozenset({"random"})


def units_of(value: Any, per_element: float = 1 / SCANS_PER_UNIT) -> int:
    """What handling `value` costs: strings per CHARS_PER_UNIT characters, collections per element."""
    if isinstance(value, str):
        return len(value) // CHARS_PER_UNIT
    if isinstance(value, list | tuple | dict | OrderedSet | range):
        return int(len(value) * per_element)
    return 0


def charged_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """`func`, charging for its arguments and checking its value first (see the tables above)."""
    per_element = ITERATING_FILTERS.get(name, 1 / SCANS_PER_UNIT)
    per_char, check = TEXT_FILTERS.get(name, (per_element / 4 if name in ITERATING_FILTERS else 0, None))
    check = check or CHECKED_FILTERS.get(name)
    skip = 0 if getattr(func, "jinja_pass_arg", None) is None else 1  # the environment or a context

    @functools.wraps(func)  # keeps Jinja's pass_context/pass_environment mark
    def charged(*args: Any, **kwargs: Any) -> Any:
        args = _prepared(name, args, skip)
        units = FILTER_UNITS
        for arg in args[skip:]:
            units += (
                int(len(arg) * per_char) if per_char and isinstance(arg, str) else units_of(arg, per_element)
            )
        charge(units)
        if check is not None and len(args) > skip:
            check(*args[skip:], **kwargs)
        return func(*args, **kwargs)

    charged.mint_charged = True  # type: ignore[attr-defined]
    return charged


def _prepared(name: str, args: tuple[Any, ...], skip: int) -> tuple[Any, ...]:
    """The arguments with the value made ready: text for a text filter, a walked list for a comparing one."""
    if len(args) <= skip:
        return args
    value = args[skip]
    if name in TEXT_FILTERS:
        value = _text(value)
    elif name == "urlencode" and not isinstance(value, str | dict):
        value = list(value)
    elif name in COMPARING_FILTERS and not isinstance(value, jinja2.Undefined):
        if not isinstance(value, list | tuple | dict | str):
            value = list(value)
        bounded_size(value)
        if name == "unique":
            charge_keys(value)
    return (*args[:skip], value, *args[skip + 1 :])


# Tests ----------------------------------------------------------------------------------------------------

# Tests that compare their arguments (comparing nested values walks them).
COMPARING_TESTS = frozenset(
    {"in", "eq", "equalto", "==", "ne", "!=", "lt", "lessthan", "<", "le", "<=", "gt", "greaterthan", ">"}
    | {"ge", ">="}
)
# Tests that read their value as text.
TEXT_TESTS = frozenset({"lower", "upper"})
# Arithmetic on numbers (big integers cost with their size).
NUMBER_TESTS = frozenset({"divisibleby", "odd", "even"})
# Tests of a value's kind or identity: constant work.
CONSTANT_TESTS = frozenset(
    {"boolean", "callable", "defined", "escaped", "false", "filter", "float", "integer", "iterable"}
    | {"mapping", "none", "number", "sameas", "sequence", "string", "test", "true", "undefined"}
)


def charged_test(name: str, func: Any) -> Callable[..., Any]:
    """A test charged for what it reads: comparisons walk nested values, text tests read text."""

    @functools.wraps(func)
    def charged(*args: Any, **kwargs: Any) -> Any:
        if name in TEXT_TESTS and args:
            args = (_text(args[0]), *args[1:])
        units = 1
        for arg in args:
            if name in COMPARING_TESTS and isinstance(arg, list | tuple | dict):
                bounded_size(arg)  # `x is in items` compares inside elements too: charged by the walk
            elif name in NUMBER_TESTS and type(arg) is int:
                units += int_units(arg, arg, product=True)
            else:
                units += units_of(arg)
        charge(units)
        return func(*args, **kwargs)

    charged.mint_charged = True  # type: ignore[attr-defined]
    return charged
