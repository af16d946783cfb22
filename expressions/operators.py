"""Python's operators and conversions as expressions and templates get them: each charged for its work and
refusing results past the size limits (`"a" * 10**9`, `2 ** 10**9`, `"%999999999d" % 1`)."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from typing import Any

from expressions.budget import (
    CHARS_PER_UNIT,
    LINEAR_BITS,
    MAX_FORMAT_WIDTH,
    MAX_POWER_RESULT_BITS,
    SCANS_PER_UNIT,
    SMALL_INT_BITS,
    SQUARE_BITS,
    LimitExceeded,
    charge,
    charge_length,
    int_units,
)
from expressions.data import (
    ATOM_TYPES,
    CHEAP_TYPES,
    DATA_TYPES,
    TEXT_TYPES,
    OrderedSet,
    bounded_size,
    charge_key,
    charge_keys,
    check_length,
    check_text,
    counted,
    size_units,
)


def safe_str(value: Any = "") -> str:
    """str() of plain data only (never a function's address), refusing huge results and charging the walk."""
    kind = type(value)
    if kind is str:
        return check_text(value)
    if kind is int:
        charge(int_units(value, value, product=True))  # decimal conversion is quadratic
    elif kind not in CHEAP_TYPES:
        bounded_size(value)
    text = check_text(str(value))
    charge(len(text) // CHARS_PER_UNIT)
    return text


def check_format_spec(spec: str) -> None:
    """Refuse format widths and precisions that would build huge strings (`{x:>1000000000}`)."""
    if "*" in spec:
        raise LimitExceeded("`*` widths are not supported in formats")
    number = ""
    for char in spec + " ":
        if char.isdigit():
            number += char
            continue
        if number and int(number) > MAX_FORMAT_WIDTH:
            raise LimitExceeded(f"format width {number} is over {MAX_FORMAT_WIDTH}")
        number = ""


def safe_add(a: Any, b: Any) -> Any:
    if a.__class__ in CHEAP_TYPES:
        charge(int_units(a, b))
        return a + b
    if hasattr(a, "__len__") and hasattr(b, "__len__"):
        length = len(a) + len(b)
        check_length(length)
        charge_length(a, length)
    return a + b


def safe_mult(a: Any, b: Any) -> Any:
    if type(a) is int and type(b) is int:
        if a.bit_length() + b.bit_length() > MAX_POWER_RESULT_BITS:
            raise LimitExceeded(
                f"a product of {a.bit_length()}- and {b.bit_length()}-bit numbers is too large"
            )
        charge(int_units(a, b, product=True))
        return a * b
    for seq, times in ((a, b), (b, a)):
        if hasattr(seq, "__len__") and isinstance(times, int):
            check_length(times * len(seq))
            charge_length(seq, times * len(seq))
    return a * b


# A `%` field's width and precision (`*` takes them from the arguments, which is refused).
_PERCENT_NUMBERS = re.compile(r"%(?:\([^)]*\))?[-+ #0]*(\*|\d*)(?:\.(\*|\d*))?")


def safe_mod(a: Any, b: Any) -> Any:
    """`%` formatting with its widths and precisions bounded like format specs, and the size of its result
    estimated from its format and arguments before it is built."""
    if not isinstance(a, str | bytes):
        charge(int_units(a, b, product=True))
        return a % b
    text = a.decode("latin-1") if isinstance(a, bytes) else a
    fields = text.count("%")
    charge(2 * fields + (len(b) if isinstance(b, tuple | dict) else 1))  # fields and values read in Python
    numbers = [n for pair in _PERCENT_NUMBERS.findall(text) for n in pair if n]
    if "*" in numbers:
        raise LimitExceeded("`*` widths are not supported in formats")
    widths = list(map(int, numbers))
    if widths and max(widths) > MAX_FORMAT_WIDTH:
        raise LimitExceeded(f"format width {max(widths)} is over {MAX_FORMAT_WIDTH}")
    padding = sum(widths)
    if isinstance(b, dict):  # `%(name)s`: each field may repeat the longest value
        longest = max((len(safe_str(v)) for v in b.values()), default=0)
        estimate = len(a) + padding + fields * longest
    else:
        values = b if isinstance(b, tuple) else (b,)
        estimate = len(a) + padding + sum(len(safe_str(v)) for v in values)
    check_length(estimate)
    charge(estimate // CHARS_PER_UNIT)
    result = a % b
    check_length(len(result))  # `%r` may escape characters beyond the estimate
    return result


def safe_power(base: Any, exponent: Any) -> Any:
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and base not in (0, 1, -1):
        bits = abs(base).bit_length() * exponent
        if bits > MAX_POWER_RESULT_BITS:
            shown = (
                base if abs(base).bit_length() <= SMALL_INT_BITS else f"a {abs(base).bit_length()}-bit number"
            )
            raise LimitExceeded(f"{shown} ** {exponent} is too large")
        if bits > SMALL_INT_BITS:
            charge(bits * bits // SQUARE_BITS + bits // LINEAR_BITS)
    return base**exponent


def safe_lshift(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int):
        if abs(a).bit_length() + b > MAX_POWER_RESULT_BITS:
            raise LimitExceeded(f"{a} << {b} is too large")
        charge((abs(a).bit_length() + max(b, 0)) // LINEAR_BITS)
    return a << b


def safe_round(number: Any, ndigits: int | None = None) -> Any:
    """round(), refusing digit counts that would make Python build 10 ** ndigits (`round(5, -10 ** 9)`)."""
    if ndigits is not None and isinstance(ndigits, int) and abs(ndigits) > MAX_FORMAT_WIDTH:
        raise LimitExceeded(f"round to {ndigits} digits is over the limit of {MAX_FORMAT_WIDTH}")
    if ndigits is not None and isinstance(number, int):  # divides by 10 ** -ndigits
        charge(int_units(number, 10 ** min(abs(ndigits), MAX_FORMAT_WIDTH), product=True))
    return round(number) if ndigits is None else round(number, ndigits)


def safe_divmod(a: Any, b: Any) -> Any:
    charge(int_units(a, b, product=True))
    return divmod(a, b)


def safe_int(value: Any = 0, base: int | None = None) -> int:
    """int(), refusing text for numbers past the size limit and charging the (quadratic) conversion."""
    if isinstance(value, str | bytes):
        bits = len(value) * (4 if base is None or base == 10 else max(int(base), 2).bit_length())
        if bits > MAX_POWER_RESULT_BITS:
            raise LimitExceeded(f"a number of {len(value)} digits is too large")
        charge(bits * bits // SQUARE_BITS if base in (None, 10) else bits // LINEAR_BITS)
    return int(value) if base is None else int(value, base)


def _comparison_units(a: Any, b: Any, equality: bool) -> int:
    """What `a == b` or `a < b` may cost: what it really walks, never the size of a value it does not.

    A container against a scalar, or against another kind, is decided at once; containers of one kind that
    differ in length are unequal at once; otherwise Python compares element by element, which goes no
    further than the smaller value (nested ones too), so that is what is walked and charged."""
    kind_a, kind_b = type(a), type(b)
    if kind_a in CHEAP_TYPES or kind_b in CHEAP_TYPES:
        return int_units(a, b) if kind_a is int and kind_b is int else 0
    for value in (a, b):
        if type(value) not in DATA_TYPES:
            bounded_size(value)  # refuses what is not data
    if kind_a in TEXT_TYPES and kind_b in TEXT_TYPES:
        return min(len(a), len(b)) // CHARS_PER_UNIT
    if kind_a in ATOM_TYPES or kind_b in ATOM_TYPES or kind_a is not kind_b:
        return 0 if OrderedSet not in (kind_a, kind_b) else size_units(a) + size_units(b)
    if kind_a is OrderedSet:  # compared as Python sets, built for the purpose: every member hashed
        charge_keys(a)
        charge_keys(b)
        return size_units(a) + size_units(b)
    if equality and len(a) != len(b):
        return 0
    first, second = (a, b) if len(a) <= len(b) else (b, a)
    counted(second, counted(first))  # charges the walks, which outweigh the comparison at C speed
    return 0


def _membership_units(item: Any, container: Any) -> int:
    """What `item in container` costs: a hash for a dict or set, a search for text, and for a list or tuple
    a comparison with each element, each going no further than `item` itself."""
    kind = type(container)
    if kind is dict or kind is OrderedSet:
        charge_key(item)  # hashed (text keeps its hash once computed)
        return len(item) // CHARS_PER_UNIT if type(item) is str else 0
    if kind in TEXT_TYPES:
        return (len(container) + (len(item) if type(item) in TEXT_TYPES else 0)) // CHARS_PER_UNIT
    if kind is list or kind is tuple:
        item_kind = type(item)
        if item_kind in CHEAP_TYPES:
            weight = 1 + int_units(item, item)
        elif item_kind in TEXT_TYPES:
            weight = 1 + len(item) // (CHARS_PER_UNIT // SCANS_PER_UNIT)
        else:
            weight = bounded_size(item)
        return len(container) * weight // SCANS_PER_UNIT
    bounded_size(container)  # anything else: walked, and refused if it is not data
    return size_units(container)


def sized_compare(op: Callable[[Any, Any], Any], kind: str = "order") -> Callable[[Any, Any], Any]:
    """A comparison operator (`kind`: order, equality or membership) that charges for what comparing strings
    and collections really walks."""

    def compare(a: Any, b: Any, cheap: frozenset[type] = CHEAP_TYPES) -> Any:
        if a.__class__ not in cheap or b.__class__ not in cheap:
            if kind == "membership":
                charge(_membership_units(a, b))
            else:
                charge(_comparison_units(a, b, kind == "equality"))
        return op(a, b)

    return compare


def sized_operator(op: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """A binary operator (`| & ^ -`, for sets and dicts) that charges for the sizes of its operands."""

    def apply(a: Any, b: Any) -> Any:
        charge(int_units(a, b) if type(a) in CHEAP_TYPES else size_units(a) + size_units(b))
        if type(a) is OrderedSet:  # the other operand's members are hashed
            charge_keys(b)
        return op(a, b)

    return apply


COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "eq": sized_compare(operator.eq, "equality"),
    "ne": sized_compare(operator.ne, "equality"),
    "lt": sized_compare(operator.lt),
    "lteq": sized_compare(operator.le),
    "gt": sized_compare(operator.gt),
    "gteq": sized_compare(operator.ge),
    "in": sized_compare(lambda a, b: a in b, "membership"),
    "notin": sized_compare(lambda a, b: a not in b, "membership"),
}
