"""Workflow task slots that count only the workflow tasks the worker is computing, and fewer of them while its
CPU is short: so that a loaded worker leaves its backlog in Temporal's task queue, where the fairness keys
order it between tenants, rather than taking it in and serving it first come, first served.

Two things go wrong with Temporal's fixed slots (README: Fairness between tenants). A workflow task holds its
slot while its local activities run (Mint's calls in the worker, its transition writes), so one tenant's flood
of slow calls in the worker fills the slots with tasks that only wait on the network, and every other
tenant's task waits for one of them to end. And a worker whose CPU is short (other work on the machine, or
too many tasks at once: its threads take turns holding the GIL) computes all the tasks it has taken at once,
each a little, so a quick task taken after a flood's ends after all of them. Here a task whose run is waiting
on a call in the worker (activities/tenant_limits.py says which) is idle and takes none of `limit`; and the
number of tasks computed at once follows the event loop's lag, which grows with both causes: it shrinks while
the loop lags (down to FLOOR) and grows back when it does not.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from temporalio.worker import (
    CustomSlotSupplier,
    SlotMarkUsedContext,
    SlotPermit,
    SlotReleaseContext,
    SlotReserveContext,
)

# How often the loop's lag is read, and the lags past which the number of tasks computed at once shrinks
# (a quarter each time) or grows (a twentieth of the limit each time): seconds.
PERIOD = 0.1
LAGGING = 0.05
KEEPING_UP = 0.01
FLOOR = 2


def next_target(target: int, limit: int, lag: float) -> int:
    """How many tasks to compute at once after a period whose timer fired `lag` seconds late."""
    if lag > LAGGING:
        return max(min(FLOOR, limit), target * 3 // 4)
    if lag < KEEPING_UP:
        return min(limit, target + max(1, limit // 20))
    return target


@dataclass
class _Permit(SlotPermit):
    pass


class WorkflowTaskSlots(CustomSlotSupplier):
    """At most `limit` workflow tasks computing at once (fewer while the loop lags) and `most` held in all,
    idle ones (waiting on a call in the worker) included."""

    def __init__(self, limit: int, most: int):
        self.limit = limit
        self.most = max(most, limit)
        self.target = limit
        self.held = 0
        self._idle_runs: Counter[str] = Counter()
        self._changed = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._expected = 0.0

    @property
    def computing(self) -> int:
        return max(0, self.held - len(self._idle_runs))

    def _free(self) -> bool:
        return self.held < self.most and self.computing < self.target

    async def reserve_slot(self, ctx: SlotReserveContext) -> SlotPermit:
        self._watch(asyncio.get_running_loop())
        while not self._free():
            changed = self._changed
            await changed.wait()
        self.held += 1
        return _Permit()

    def try_reserve_slot(self, ctx: SlotReserveContext) -> SlotPermit | None:
        if not self._free():
            return None
        self.held += 1
        return _Permit()

    def mark_slot_used(self, ctx: SlotMarkUsedContext) -> None:
        pass

    def release_slot(self, ctx: SlotReleaseContext) -> None:
        self.held -= 1
        self._notify()

    @contextlib.contextmanager
    def waiting_on_call(self, run_id: str) -> Iterator[None]:
        """While the block runs, `run_id`'s workflow task waits on a call in the worker: idle."""
        self._idle_runs[run_id] += 1
        self._notify()
        try:
            yield
        finally:
            self._idle_runs[run_id] -= 1
            if not self._idle_runs[run_id]:
                del self._idle_runs[run_id]

    def _notify(self) -> None:
        """Wake the reservations waiting (from any thread: Temporal's core may release a slot off the loop)."""
        if self._loop is None or self._loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self._wake()
        else:
            self._loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def _watch(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start reading the loop's lag, once: a timer that re-arms itself (nothing to stop when the loop ends)."""
        if self._loop is loop:
            return
        self._loop = loop
        self._expected = loop.time() + PERIOD
        loop.call_at(self._expected, self._tick)

    def _tick(self) -> None:
        assert self._loop is not None
        now = self._loop.time()
        target = next_target(self.target, self.limit, now - self._expected)
        if target > self.target:
            self.target = target
            self._wake()
        self.target = target
        self._expected = now + PERIOD
        self._loop.call_at(self._expected, self._tick)
