"""Limits for user expressions and templates: a work budget, size checks, and plain-data rules.

Expressions run inside Temporal workflow tasks, which Temporal treats as deadlocked after 2 s, on workers
shared by every tenant. So work is counted (deterministically, in units, never in seconds) and sizes are
checked before a value is built, not after. A unit is about one evaluated AST node, roughly half a
microsecond on a small machine; work done at C speed is charged by size at a discount (a unit per so many
elements walked, scanned or copied, or characters), and a step's whole budget is a few tens of milliseconds
of CPU and a few tens of megabytes. Behind the units, a CPU guard fails a step that outruns them anyway
(STEP_CPU_SECONDS): a charge that is too low becomes a failed step, never a wedged workflow task.
"""

from __future__ import annotations

import contextlib
import contextvars
import gc
import operator
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import date, datetime, timedelta
from datetime import time as dtime
from itertools import chain, compress, repeat
from typing import Any

MAX_STRING_LENGTH = 1_000_000
MAX_RANGE = 100_000
MAX_ELEMENTS = 1_000_000
MAX_POWER_RESULT_BITS = 100_000
MAX_FORMAT_WIDTH = 1_000
# Units one step may spend, and how many a workflow task may spend before the interpreter yields to Temporal.
STEP_BUDGET = 120_000
YIELD_AFTER = 250_000
ELEMENTS_PER_UNIT = 4  # values walked one by one (bounded_size)
SCANS_PER_UNIT = 16  # elements iterated, compared or hashed at C speed
COPIES_PER_UNIT = 16  # elements copied at C speed (concatenation, slices, repetition): 128 bytes
CHARS_PER_UNIT = 64  # characters copied or scanned at C speed
# Integers past a machine word cost with their size: sums and comparisons a unit per LINEAR_BITS bits,
# products, quotients and conversions to and from decimal text a unit per SQUARE_BITS square bits.
SMALL_INT_BITS = 64
LINEAR_BITS = 1 << 10
SQUARE_BITS = 1 << 18


# The last line of defence: CPU a step's expressions and templates may use, whatever their units say. Temporal
# fails a workflow task that runs 2 s of wall time (on a machine the API shares) as deadlocked and retries
# it forever, so a step that gets this far must fail well before that. The clock (a system call, under a
# microsecond) is read when CLOCK_EVERY more units have been charged: some 30 us of work apart.
STEP_CPU_SECONDS = 0.5
CLOCK_EVERY = 64


class _CollectorClock(threading.local):
    """CPU the garbage collector spent on this thread. Python collects on whichever thread allocates when a
    threshold is crossed, and a full collection of a worker's heap (everything every workflow holds) can take
    most of a second: that is the process's work, not the step's, and must not fail the step."""

    started: float | None = None
    spent = 0.0


_COLLECTOR = _CollectorClock()


def _time_collections(phase: str, info: dict[str, Any]) -> None:
    if phase == "start":
        _COLLECTOR.started = time.thread_time()
    elif _COLLECTOR.started is not None:
        _COLLECTOR.spent += time.thread_time() - _COLLECTOR.started
        _COLLECTOR.started = None


if _time_collections not in gc.callbacks:  # this module is imported once (the sandbox passes it through)
    gc.callbacks.append(_time_collections)


def step_clock() -> float:
    """This thread's CPU time less its garbage collections': what the CPU guard counts."""
    return time.thread_time() - _COLLECTOR.spent


class LimitExceeded(ValueError):
    """An expression or template would do too much work or build too large a value."""


class Budget:
    """Counts the work of one execution's expressions: per step, and since the workflow last yielded.

    Besides units, it keeps the CPU time the step's evaluations used (see STEP_CPU_SECONDS): units are
    deterministic and decide every ordinary refusal; the CPU guard only catches work that was charged too
    little, a bug, and turns it into a failed step instead of a wedged workflow task."""

    def __init__(self, per_step: int = STEP_BUDGET, cpu_seconds: float | None = STEP_CPU_SECONDS):
        self.per_step = per_step
        self.left = per_step  # decremented inline on the evaluator's hot path
        self._earlier = 0  # spent since the last yield, before the current step
        self.cpu_seconds = cpu_seconds  # None: no CPU guard for this step
        self._cpu_limit = cpu_seconds
        self._cpu_used = 0.0  # CPU of the step's finished evaluations
        self._cpu_since: float | None = None  # step_clock() when the running evaluation began
        self._check_at = per_step - CLOCK_EVERY  # `left` below this: look at the clock (and at `left`)
        self._once: set[Any] = set()

    def charge(self, units: int) -> None:
        self.left -= units
        if self.left < self._check_at:
            self._check()

    def _check(self) -> None:
        if self.left < 0:
            raise LimitExceeded(
                f"a step may do at most {self.per_step} operations; split the work across steps"
            )
        self._check_at = max(self.left - CLOCK_EVERY, 0)
        if self._cpu_limit is not None and self.cpu_used > self._cpu_limit:
            raise LimitExceeded(
                f"a step may use at most {self._cpu_limit} s of CPU and this one used more, although it "
                "stayed within its operations; split the work across steps"
            )

    def charge_once(self, key: Any, units: int) -> None:
        """Charge `units` for `key` (a regex to compile, say) once per step: the first use pays."""
        if key not in self._once:
            self.charge(units)
            self._once.add(key)

    def start_step(self, cpu_guard: bool = True) -> None:
        """Begin a step: a fresh allowance of units and CPU. The interpreter turns the CPU guard off while
        Temporal replays history, where it must repeat what the first run did (see Interpreter._run_step)."""
        self._earlier += self.per_step - self.left
        self.left = self.per_step
        self._check_at = self.per_step - CLOCK_EVERY
        self._cpu_limit = self.cpu_seconds if cpu_guard else None
        self._cpu_used = 0.0
        self._once.clear()

    @property
    def cpu_used(self) -> float:
        """CPU the step's evaluations used so far, this thread's running one included."""
        running = 0.0 if self._cpu_since is None else step_clock() - self._cpu_since
        return self._cpu_used + running

    @contextlib.contextmanager
    def evaluating(self) -> Iterator[None]:
        """Count the CPU of the block (one evaluation, which runs start to end on one thread: never across
        an await, where other workflows run on this thread and this one may move to another)."""
        if self._cpu_since is not None:  # nested: the outer block counts it
            yield
            return
        self._cpu_since = step_clock()
        try:
            yield
        finally:
            self._cpu_used += step_clock() - self._cpu_since
            self._cpu_since = None

    def yielded(self) -> None:
        self._earlier = self.left - self.per_step

    @property
    def since_yield(self) -> int:
        return self._earlier + self.per_step - self.left

    @property
    def should_yield(self) -> bool:
        return self.since_yield >= YIELD_AFTER


# The budget of the expression or template being evaluated: operators and helpers that are plain functions
# (shared by every execution) charge it. Evaluation is synchronous, so one is active per thread of control.
_ACTIVE: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("mint_budget", default=None)


@contextlib.contextmanager
def charging(budget: Budget) -> Iterator[None]:
    """Make `budget` the one plain-function helpers charge while the block runs, and count its CPU."""
    token = _ACTIVE.set(budget)
    try:
        with budget.evaluating():
            yield
    finally:
        _ACTIVE.reset(token)


def charge(units: int) -> None:
    """Charge the active budget (if any) `units`."""
    if units:
        budget = _ACTIVE.get()
        if budget is not None:
            budget.charge(units)


def charge_once(key: Any, units: int) -> None:
    """Charge the active budget (if any) `units` for `key`, the first time in this step only."""
    budget = _ACTIVE.get()
    if budget is not None:
        budget.charge_once(key, units)


def charge_length(value: Any, length: int) -> None:
    """Charge for copying `length` items of `value`'s kind (characters, elements, or a dict's entries)."""
    if isinstance(value, str | bytes):
        charge(length // CHARS_PER_UNIT)
    else:
        charge(length // (SCANS_PER_UNIT if isinstance(value, dict) else COPIES_PER_UNIT))


def int_units(a: Any, b: Any = 0, product: bool = False) -> int:
    """What an operation on integers `a` and `b` costs beyond a node (0 unless one is past a word)."""
    bits_a = a.bit_length() if isinstance(a, int) else 0
    bits_b = b.bit_length() if isinstance(b, int) else 0
    if bits_a <= SMALL_INT_BITS and bits_b <= SMALL_INT_BITS:
        return 0
    units = (bits_a + bits_b) // LINEAR_BITS
    if product:
        units += max(bits_a, SMALL_INT_BITS) * max(bits_b, SMALL_INT_BITS) // SQUARE_BITS
    return units


def big_ints_units(items: Any, product: bool) -> int:
    """What a pass of arithmetic over `items` costs for its big integers (sum: linear; statistics, with exact
    fractions: quadratic), from the largest one."""
    if not isinstance(items, list | tuple) or int not in (kinds := set(map(type, items))):
        return 0
    top = max(map(int.bit_length, items if len(kinds) == 1 else [i for i in items if type(i) is int]))
    if top <= SMALL_INT_BITS:
        return 0
    return len(items) * (top * top // SQUARE_BITS if product else top // LINEAR_BITS)


def int_arithmetic(op: Callable[[Any, Any], Any], product: bool) -> Callable[[Any, Any], Any]:
    """An arithmetic operator charged for the size of big integers (`//`, `/`, `>>`)."""

    def apply(a: Any, b: Any) -> Any:
        charge(int_units(a, b, product))
        return op(a, b)

    return apply


def value_units(value: Any) -> int:
    """What reading `value` once costs at C speed: its length, or its size for a big integer."""
    if type(value) is int:
        return int_units(value)
    return size_units(value)


# Integers hash to themselves modulo 2**61 - 1, so larger ones can be chosen to share a hash, and a dict or
# set of n of them takes n * n comparisons to build: they may not be keys or members.
HASH_MODULUS = 2**61 - 1


def charge_key(key: Any) -> None:
    """Charge for hashing `key`: a tuple walks its members every time (it keeps no hash), the rest is cheap;
    refuse a key that could collide on purpose (see HASH_MODULUS)."""
    kind = type(key)
    if kind is tuple:
        bounded_size(key)
        _refuse_colliding(key)
    elif kind is int and not -HASH_MODULUS < key < HASH_MODULUS:
        _refuse_colliding((key,))


def charge_keys(items: Any) -> None:
    """charge_key for each of `items` (building a set or dict from them), at C speed for the common kinds."""
    if isinstance(items, dict | OrderedSet):
        items = list(items)
    if not isinstance(items, list | tuple) or not items:
        return
    if tuple in set(map(type, items)):
        bounded_size([item for item in items if type(item) is tuple])
    _refuse_colliding(items)


def _refuse_colliding(items: list[Any] | tuple[Any, ...]) -> None:
    kinds = set(map(type, items))
    if int in kinds:
        numbers = items if len(kinds) == 1 else [item for item in items if type(item) is int]
        if max(map(abs, numbers)) >= HASH_MODULUS:
            raise LimitExceeded("a number past 2**61 cannot be a dict key or set member")
    if tuple in kinds:
        for item in items:
            if type(item) is tuple:
                _refuse_colliding(item)


def size_units(value: Any) -> int:
    """The units a pass over `value` at C speed costs (0 for scalars)."""
    kind = type(value)
    if kind is str or kind is bytes:
        return len(value) // CHARS_PER_UNIT
    if kind in _COLLECTIONS:
        return len(value) // SCANS_PER_UNIT
    return 0


class OrderedSet:
    """The set expressions get: iteration follows insertion order, so replays see the same order.

    (Python's own sets iterate strings in an order that changes from process to process.)"""

    __slots__ = ("_items",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, items: Iterable[Any] = ()):
        self._items = dict.fromkeys(items)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, item: Any) -> bool:
        return item in self._items

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OrderedSet | set | frozenset) and set(self._items) == set(other)

    def __or__(self, other: Iterable[Any]) -> OrderedSet:
        return OrderedSet([*self._items, *other])

    def __and__(self, other: Iterable[Any]) -> OrderedSet:
        keep = set(other)
        return OrderedSet(i for i in self._items if i in keep)

    def __sub__(self, other: Iterable[Any]) -> OrderedSet:
        drop = set(other)
        return OrderedSet(i for i in self._items if i not in drop)

    def __xor__(self, other: Iterable[Any]) -> OrderedSet:
        theirs = OrderedSet(other)
        return (self - theirs) | (theirs - self)

    def __le__(self, other: Iterable[Any]) -> bool:
        return set(self._items) <= set(other)

    def __ge__(self, other: Iterable[Any]) -> bool:
        return set(self._items) >= set(other)

    def __lt__(self, other: Iterable[Any]) -> bool:
        return set(self._items) < set(other)

    def __gt__(self, other: Iterable[Any]) -> bool:
        return set(self._items) > set(other)

    def __repr__(self) -> str:
        return "{" + ", ".join(repr(i) for i in self._items) + "}" if self._items else "set()"


_ATOMS = frozenset({type(None), bool, int, float, datetime, date, dtime, timedelta})
_ATOMS_AND_TEXT = _ATOMS | {str, bytes}
_COLLECTIONS: frozenset[type] = frozenset({list, tuple, dict, OrderedSet, set, frozenset})
_CHEAP = frozenset({type(None), bool, int, float})
_TEXT = frozenset({str, bytes})
_DATA = _ATOMS_AND_TEXT | _COLLECTIONS
CONTAINER_WEIGHT = 8


def bounded_size(value: Any, limit: int = MAX_ELEMENTS) -> int:
    """Count the values in plain data (a string counts 1 + len // 8, a list or dict CONTAINER_WEIGHT: it
    costs that much more to walk or print), refusing anything that is not data and stopping past `limit`;
    shared references count each time they appear (str and JSON repeat them).

    The walk charges the active budget (a unit per ELEMENTS_PER_UNIT values) and stops once it cannot pay."""
    count = counted(value, limit)
    if count > limit:
        raise LimitExceeded(f"value is too large (over {limit} elements)")
    return count


def counted(value: Any, most: int = MAX_ELEMENTS) -> int:
    """bounded_size's walk and charge, stopping (with a count past `most`, but no complaint) once past it."""
    budget = _ACTIVE.get()
    cap = most if budget is None else min(most, (max(budget.left, 0) + 1) * ELEMENTS_PER_UNIT)
    count = _count(value, cap)
    if budget is not None:
        budget.charge(count // ELEMENTS_PER_UNIT)
    return count


def _count(value: Any, cap: int) -> int:
    count = 0
    stack = [value]
    while stack and count <= cap:
        item = stack.pop()
        kind = type(item)
        count += 1
        if kind in _ATOMS:
            if kind is int and item.bit_length() > SMALL_INT_BITS:  # printed in quadratic time
                count += ELEMENTS_PER_UNIT * int_units(item, item, product=True)
            continue
        if kind is str or kind is bytes:
            count += len(item) // 8
            continue
        count += CONTAINER_WEIGHT - 1
        if kind is dict:
            count += _scan(item.keys(), stack, cap - count)
            count += _scan(item.values(), stack, cap - count)
        elif kind in _COLLECTIONS:
            if len(item) <= 8:
                stack.extend(item)  # small: cheaper to walk than to scan
            else:
                count += _scan(item, stack, cap - count)
        elif isinstance(item, str | bytes):  # a subclass, such as Jinja's Markup
            count += len(item) // 8 - CONTAINER_WEIGHT + 1
        elif isinstance(item, dict):
            count += _scan(item.keys(), stack, cap - count)
            count += _scan(item.values(), stack, cap - count)
        elif isinstance(item, list | tuple):
            count += _scan(item, stack, cap - count)
        else:
            raise LimitExceeded(f"a {kind.__name__} is not data")
    return count


def _scan(items: Any, stack: list[Any], room: int) -> int:
    """Count a collection's scalar members in bulk (at C speed when they are all numbers and the like) and
    push the others for the walk; returns what it counted."""
    size = len(items)
    if size > room:
        return size  # over the cap either way
    kinds = set(map(type, items))
    if kinds <= _ATOMS:
        if int in kinds:  # big integers print in quadratic time
            ints = items if len(kinds) == 1 else [i for i in items if type(i) is int]
            top = max(map(int.bit_length, ints))
            if top > SMALL_INT_BITS:
                return size * (1 + ELEMENTS_PER_UNIT * int_units(1 << top, 1 << top, product=True))
        return size
    if kinds <= _ATOMS_AND_TEXT:
        return size + sum(len(i) for i in items if type(i) is str or type(i) is bytes) // 8
    stack.extend(items)
    return 0


def nests_deeper(value: Any, levels: int) -> tuple[bool, int]:
    """Whether lists and dicts nest more than `levels` deep in `value` (a flat list is one level), and how
    many members the walk looked at to find out: a level at a time, every step of it at C speed."""
    level, depth, scanned = [value], 0, 0
    while level:
        depth += 1
        if depth > levels:
            return True, scanned
        dicts = compress(level, map(operator.is_, map(type, level), repeat(dict)))
        lists = compress(level, map(operator.is_, map(type, level), repeat(list)))
        members = [*chain.from_iterable(map(dict.values, dicts)), *chain.from_iterable(lists)]
        scanned += len(level) + len(members)
        level = list(compress(members, map(_NESTS.__contains__, map(type, members))))
    return False, scanned


_NESTS = frozenset({list, dict})
NESTING_SCANS_PER_UNIT = 8  # nests_deeper: 60-100 ns a member, measured
MAX_DEPTH = 64


def check_depth(value: Any, limit: int = MAX_DEPTH) -> None:
    """Refuse data nested deeper than `limit` (recursive code further on would overflow)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            raise LimitExceeded(f"data is nested more than {limit} levels deep")
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list | tuple):
            stack.extend((v, depth + 1) for v in item)


def check_text(text: str) -> str:
    if len(text) > MAX_STRING_LENGTH:
        raise LimitExceeded(f"string longer than {MAX_STRING_LENGTH} characters")
    return text


def check_length(length: int) -> None:
    if length > MAX_STRING_LENGTH:
        raise LimitExceeded(f"result longer than {MAX_STRING_LENGTH}")


def safe_str(value: Any = "") -> str:
    """str() of plain data only (never a function's address), refusing huge results and charging the walk."""
    kind = type(value)
    if kind is str:
        return check_text(value)
    if kind is int:
        charge(int_units(value, value, product=True))  # decimal conversion is quadratic
    elif kind not in _CHEAP:
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
    if a.__class__ in _CHEAP:
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
    if kind_a in _CHEAP or kind_b in _CHEAP:
        return int_units(a, b) if kind_a is int and kind_b is int else 0
    for value in (a, b):
        if type(value) not in _DATA:
            bounded_size(value)  # refuses what is not data
    if kind_a in _TEXT and kind_b in _TEXT:
        return min(len(a), len(b)) // CHARS_PER_UNIT
    if kind_a in _ATOMS or kind_b in _ATOMS or kind_a is not kind_b:
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
    if kind in _TEXT:
        return (len(container) + (len(item) if type(item) in _TEXT else 0)) // CHARS_PER_UNIT
    if kind is list or kind is tuple:
        item_kind = type(item)
        if item_kind in _CHEAP:
            weight = 1 + int_units(item, item)
        elif item_kind in _TEXT:
            weight = 1 + len(item) // (CHARS_PER_UNIT // SCANS_PER_UNIT)
        else:
            weight = bounded_size(item)
        return len(container) * weight // SCANS_PER_UNIT
    bounded_size(container)  # anything else: walked, and refused if it is not data
    return size_units(container)


def sized_compare(op: Callable[[Any, Any], Any], kind: str = "order") -> Callable[[Any, Any], Any]:
    """A comparison operator (`kind`: order, equality or membership) that charges for what comparing strings
    and collections really walks."""

    def compare(a: Any, b: Any, cheap: frozenset[type] = _CHEAP) -> Any:
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
        charge(int_units(a, b) if type(a) in _CHEAP else size_units(a) + size_units(b))
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
