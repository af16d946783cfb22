"""The work budget of user expressions and templates, and the CPU guard behind it.

Expressions run inside Temporal workflow tasks, which Temporal treats as deadlocked after 2 s, on workers
shared by every tenant. So work is counted (deterministically, in units, never in seconds) and sizes are
checked before a value is built, not after. A unit is about one evaluated AST node, roughly half a
microsecond on a small machine; work done at C speed is charged by size at a discount (a unit per so many
elements walked, scanned or copied, or characters), and a step's whole budget is a few tens of milliseconds
of CPU and a few tens of megabytes. Behind the units, a CPU guard fails a step that outruns them anyway
(STEP_CPU_SECONDS): a charge that is too low becomes a failed step, never a wedged workflow task.

Sizes and plain-data rules are in `data.py`, Python's operators as the sandbox gets them in `operators.py`.
"""

from __future__ import annotations

import contextvars
import gc
import threading
import time
from collections.abc import Callable
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


def _time_collections(phase: str, info: dict[str, int]) -> None:
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

    def evaluating(self) -> Counting:
        """Count the CPU of the block (one evaluation, which runs start to end on one thread: never across
        an await, where other workflows run on this thread and this one may move to another)."""
        return Counting(self, None)

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


class Counting:
    """A block of evaluation: it counts its CPU into the budget's step (a nested block leaves that to the
    outer one) and, given a context variable, makes the budget the one plain-function helpers charge.

    A class, not a generator-based context manager: every pure step opens a few of these, and a generator's
    setup costs more than the step's own expression."""

    __slots__ = ("budget", "active", "token", "outer")

    def __init__(self, budget: Budget, active: contextvars.ContextVar[Budget | None] | None) -> None:
        self.budget = budget
        self.active = active
        self.token: contextvars.Token[Budget | None] | None = None
        self.outer = False

    def __enter__(self) -> None:
        budget = self.budget
        if self.active is not None:
            self.token = self.active.set(budget)
        self.outer = budget._cpu_since is None
        if self.outer:
            budget._cpu_since = step_clock()

    def __exit__(self, *exc: object) -> None:
        budget = self.budget
        if self.outer and budget._cpu_since is not None:
            budget._cpu_used += step_clock() - budget._cpu_since
            budget._cpu_since = None
        if self.token is not None and self.active is not None:
            self.active.reset(self.token)


def charging(budget: Budget) -> Counting:
    """Make `budget` the one plain-function helpers charge while the block runs, and count its CPU."""
    return Counting(budget, _ACTIVE)


def active_budget() -> Budget | None:
    """The budget of the expression or template being evaluated, if one is."""
    return _ACTIVE.get()


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
