"""A cap on the calls one developer (tenant) has in flight in this worker process: the floor of fairness.

Temporal's fairness keys (services/executions/launch.py) order the dispatch of a backlog between developers, but they do
not preempt: once a tenant's slow calls hold the worker's activity slots, another tenant's quick call waits
for one of them to end. And calls that run in the worker (local activities, activities/worker_calls.py) never
pass through a task queue at all. So each call activity (model, api_call, integration, MCP) first takes one of
its developer's `per_developer` places here; a call beyond that waits in its slot, which is cheap (a
coroutine). The cap bounds what one developer takes of what lies behind the slots (connections, a provider's
rate limit, the worker's CPU); it frees no slot (a waiting call holds one), so the worker has many slots
(Settings.worker_max_activities, 1000, ten times Settings.max_calls_per_developer): one developer's flood must
pass that before another's call finds none free, and past it the fairness key decides who gets the next
(bench/fairness.py measures both; docs/fairness.md has the figures).

A waiting call must not fail for having waited. Heartbeats go on while it waits (activities/heartbeat.py), so
the heartbeat timeout does not cut it off; the attempt's start-to-close timeout keeps counting, though, and it
is the call's own deadline plus a few seconds of slack (workflows/calls.py). So a call waits at most what its
attempt can spare (`spare_seconds`): past that it runs over the cap rather than time out. The cap then holds
for every tenant whose calls end within that slack of each other, and past it Temporal's fairness still
orders what waits in the task queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncIterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from temporalio import activity
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from activities.heartbeat import heartbeating
from contracts.calls import CallBatch, IntegrationCallRequest, ModelRequest, WorkerCall
from contracts.step_runs import StepRun
from contracts.temporal import CALL_API, CALL_INTEGRATION, CALL_MCP, CALL_MODEL
from workflows.calls import DEFAULT_TIMEOUT_SECONDS

log = logging.getLogger("mint.activities")

# The activities that call out of Mint, and so may take long: the ones a developer's places count.
CAPPED_CALLS = frozenset({CALL_MODEL, CALL_API, CALL_INTEGRATION, CALL_MCP})
# A call without a deadline of its own (a model call, MCP) may spend this share of its attempt waiting.
WAIT_SHARE_WITHOUT_DEADLINE = 0.25
# What a waiting call leaves of its attempt's slack for the call's own clearer timeout error to win.
MARGIN_SECONDS = 1.0


@dataclass
class _Waiting:
    turn: asyncio.Future[None]
    in_worker: bool
    order: int  # arrival, across developers: the tie-break between developers with as many calls in flight


@dataclass
class _Places:
    """One developer's calls in flight, and its calls waiting for a place (its own, first come first served)."""

    in_flight: int = 0
    waiting: deque[_Waiting] = field(default_factory=deque)


@dataclass
class DeveloperLimiter:
    """At most `per_developer` calls of each developer at once (0: no cap), and at most `in_worker` calls run
    in the worker (local activities) at once, all developers together (0: no limit). A freed place goes to the
    waiting developer with the fewest calls in flight, not to the call that came first: Temporal's local
    activity slots are first come first served, so Mint keeps them many (process/worker.py) and admits here instead.
    A call that cannot have a place within `max_wait` seconds goes ahead anyway, over the cap (see the
    module's docstring)."""

    per_developer: int
    in_worker: int = 0
    _places: dict[str, _Places] = field(default_factory=dict)
    _in_worker_running: int = 0
    _arrivals: int = 0
    over_cap: int = 0  # calls that went ahead over the cap, for tests and logs

    def in_flight(self, developer: str) -> int:
        places = self._places.get(developer)
        return places.in_flight if places else 0

    def waiting(self, developer: str) -> int:
        places = self._places.get(developer)
        return len(places.waiting) if places else 0

    @property
    def running_in_worker(self) -> int:
        return self._in_worker_running

    @contextlib.asynccontextmanager
    async def place(
        self, developer: str | None, max_wait: float, in_worker: bool = False
    ) -> AsyncIterator[None]:
        """Hold a place of `developer`'s (and, `in_worker`, one of the worker's) while the block runs."""
        await self.acquire(developer, max_wait, in_worker)
        try:
            yield
        finally:
            self.release(developer, in_worker)

    def limits(self, developer: str | None, in_worker: bool) -> bool:
        return bool(developer and self.per_developer > 0) or (in_worker and self.in_worker > 0)

    def _fits(self, developer: str, places: _Places, in_worker: bool) -> bool:
        capped = bool(developer) and self.per_developer > 0 and places.in_flight >= self.per_developer
        full = in_worker and 0 < self.in_worker <= self._in_worker_running
        return not capped and not full

    async def acquire(self, developer: str | None, max_wait: float, in_worker: bool = False) -> None:
        """Take a place, waiting at most `max_wait` seconds for one (then over the cap); each acquire needs
        its release. A call with no developer counts only against the worker's places."""
        if not self.limits(developer, in_worker):
            return
        key = developer or ""
        places = self._places.setdefault(key, _Places())
        if not places.waiting and self._fits(key, places, in_worker):
            self._take(places, in_worker)
        else:
            await self._wait(key, places, max_wait, in_worker)  # returns with this call counted in flight

    def release(self, developer: str | None, in_worker: bool = False) -> None:
        if not self.limits(developer, in_worker):
            return
        places = self._places.get(developer or "")
        if places is not None:
            places.in_flight -= 1
            self._in_worker_running -= in_worker
            self._hand_on()

    def _take(self, places: _Places, in_worker: bool) -> None:
        places.in_flight += 1
        self._in_worker_running += in_worker

    async def _wait(self, developer: str, places: _Places, max_wait: float, in_worker: bool) -> None:
        self._arrivals += 1
        waiting = _Waiting(asyncio.get_running_loop().create_future(), in_worker, self._arrivals)
        places.waiting.append(waiting)
        try:
            await asyncio.wait_for(asyncio.shield(waiting.turn), timeout=max(max_wait, 0.0))
        except TimeoutError:
            pass
        except BaseException:  # cancelled while waiting: give back a place handed on meanwhile
            if waiting.turn.done():
                self.release(developer or None, in_worker)
            else:
                places.waiting.remove(waiting)
                self._forget(developer, places)
            raise
        if waiting.turn.done():
            return  # handed a place, already counted by _hand_on
        places.waiting.remove(waiting)
        waiting.turn.cancel()
        self._take(places, in_worker)
        self.over_cap += 1
        log.warning(
            "developer %s has %d calls in flight (MINT_MAX_CALLS_PER_DEVELOPER is %d), the worker %d of %d: "
            "this call waited %.1f s, all its attempt could spare, and goes ahead over the cap",
            developer or "(none)",
            places.in_flight - 1,
            self.per_developer,
            self._in_worker_running - in_worker,
            self.in_worker,
            max_wait,
        )

    def _hand_on(self) -> None:
        """Hand free places to waiting calls, each to the developer with the fewest calls in flight whose
        longest-waiting call fits (counted in flight at once, so that no later call takes the place first);
        forget a developer with nothing in flight or waiting."""
        while True:
            ready = [
                (places.in_flight, places.waiting[0].order, key)
                for key, places in self._places.items()
                if places.waiting and self._fits(key, places, places.waiting[0].in_worker)
            ]
            if not ready:
                break
            places = self._places[min(ready)[2]]
            waiting = places.waiting.popleft()
            waiting.turn.set_result(None)
            self._take(places, waiting.in_worker)
        for key in [
            key for key, places in self._places.items() if not places.in_flight and not places.waiting
        ]:
            del self._places[key]

    def _forget(self, developer: str, places: _Places) -> None:
        if not places.in_flight and not places.waiting:
            self._places.pop(developer, None)


def spare_seconds(start_to_close: float | None, elapsed: float, own_deadline: float | None) -> float:
    """How long a call may wait for a place without its attempt timing out: what is left of the attempt
    (`start_to_close` less the `elapsed` seconds since it started) less the call's `own_deadline`, less a
    margin; a call without a deadline of its own may wait WAIT_SHARE_WITHOUT_DEADLINE of its attempt."""
    if start_to_close is None or start_to_close <= 0:
        return 0.0
    left = start_to_close - elapsed
    needed = own_deadline if own_deadline is not None else start_to_close * (1 - WAIT_SHARE_WITHOUT_DEADLINE)
    return max(0.0, left - needed - MARGIN_SECONDS)


def whose_call(name: str, request: Any) -> tuple[str | None, float | None] | None:
    """(developer, the call's own deadline in seconds) for a capped call activity's input; None for an
    activity that is not capped. The developer is None where the request does not say (an api_call with no
    secrets, MCP): the workflow's fairness key says then, where it has one."""
    if name not in CAPPED_CALLS:
        return None
    if isinstance(request, ModelRequest):
        return request.owner.developer_id, None
    if isinstance(request, IntegrationCallRequest):
        return (request.secrets["developer_id"] if request.secrets else None), float(request.timeout)
    if name == CALL_API and isinstance(request, dict):
        timeout = request.get("timeout")
        own = float(timeout) if isinstance(timeout, int | float) else DEFAULT_TIMEOUT_SECONDS
        return (request.get("secrets") or {}).get("developer_id"), own
    if name == CALL_INTEGRATION and isinstance(request, dict):  # as JSON, inside a WorkerCall
        return (request.get("secrets") or {}).get("developer_id"), float(request.get("timeout") or 0) or None
    return None, None


# The worker's limiter, while a batch of calls runs (call_batch_in_worker): the batch admits each of its calls
# itself (`admitted`), as this module's interceptor admits a single call.
BATCH_LIMITER: ContextVar[DeveloperLimiter | None] = ContextVar("batch_limiter", default=None)


@contextlib.asynccontextmanager
async def admitted(developer: str, attempt: float, own_deadline: float | None) -> AsyncIterator[None]:
    """Hold a place of `developer`'s, and one of the worker's, for one attempt of a batched call (which
    may last `attempt` seconds); no place is needed outside a batch that the worker's limiter admits."""
    limiter = BATCH_LIMITER.get()
    if limiter is None:
        yield
        return
    async with limiter.place(developer, spare_seconds(attempt, 0.0, own_deadline), in_worker=True):
        yield


class TenantLimits(Interceptor):
    """Gives each capped call activity a place of its developer's in `limiter` before it runs, and each call
    run in the worker (call_in_worker, by the call it carries) one of the worker's places too. `slots`, when
    given, is told which workflow runs are waiting on a call in the worker (their workflow task's slot is
    held meanwhile, but idle: infra/temporal/workflow_slots.py)."""

    def __init__(self, limiter: DeveloperLimiter, slots: WaitingRuns | None = None):
        self.limiter = limiter
        self.slots = slots

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Inbound(next, self.limiter, self.slots)


class WaitingRuns(Protocol):
    def waiting_on_call(self, run_id: str) -> contextlib.AbstractContextManager[None]: ...


class _Inbound(ActivityInboundInterceptor):
    def __init__(
        self, next: ActivityInboundInterceptor, limiter: DeveloperLimiter, slots: WaitingRuns | None
    ):
        super().__init__(next)
        self.limiter = limiter
        self.slots = slots

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        info = activity.info()
        if not info.is_local or self.slots is None or not info.workflow_run_id:
            return await self._admitted(info, input)
        with self.slots.waiting_on_call(info.workflow_run_id):
            return await self._admitted(info, input)

    async def _admitted(self, info: activity.Info, input: ExecuteActivityInput) -> Any:
        request = input.args[0] if input.args else None
        if isinstance(request, CallBatch | StepRun):  # it admits each of its calls itself
            token = BATCH_LIMITER.set(self.limiter)
            try:
                return await self.next.execute_activity(input)
            finally:
                BATCH_LIMITER.reset(token)
        in_worker = isinstance(request, WorkerCall)
        if isinstance(request, WorkerCall):
            whose = whose_call(request.activity, request.request)
            whose = (request.developer_id, whose[1]) if whose is not None else None
        else:
            whose = whose_call(info.activity_type, request)
        developer = (whose[0] or self._key(info)) if whose is not None else None
        if whose is None or not self.limiter.limits(developer, in_worker):  # Mint's own operations: no wait
            return await self.next.execute_activity(input)
        timeout = info.start_to_close_timeout
        started = info.current_attempt_scheduled_time if info.is_local else info.started_time
        elapsed = max(0.0, (datetime.now(UTC) - started).total_seconds())
        max_wait = spare_seconds(timeout.total_seconds() if timeout else None, elapsed, whose[1])
        async with heartbeating():  # a long wait must not trip the heartbeat timeout
            await self.limiter.acquire(developer, max_wait, in_worker)
        try:
            return await self.next.execute_activity(input)
        finally:
            self.limiter.release(developer, in_worker)

    @staticmethod
    def _key(info: activity.Info) -> str | None:
        return info.priority.fairness_key if info.priority else None
