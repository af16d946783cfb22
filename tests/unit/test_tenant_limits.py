"""The per-developer cap on calls in flight (activities/tenant_limits.py): one developer's calls beyond the
cap wait their turn, first come first served, while another developer's go at once; a call waits no longer
than its attempt can spare; and the limiter forgets a developer with nothing in flight."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from activities.tenant_limits import (
    BATCH_LIMITER,
    MARGIN_SECONDS,
    DeveloperLimiter,
    _Inbound,
    spare_seconds,
    whose_call,
)
from contracts.calls import BatchRetry, CallBatch, IntegrationCallRequest, ModelRequest, Owner
from contracts.temporal import CALL_API, CALL_INTEGRATION, CALL_MODEL, CALL_SYSTEM

LONG = 60.0  # a wait no test reaches: the calls it waits for end first


async def _hold(limiter: DeveloperLimiter, developer: str, release: asyncio.Event, log: list[str], name: str):
    async with limiter.place(developer, LONG):
        log.append(name)
        await release.wait()


async def test_a_developers_calls_past_the_cap_wait_while_another_developers_go_at_once():
    limiter = DeveloperLimiter(per_developer=2)
    release = asyncio.Event()
    started: list[str] = []
    flood = [asyncio.create_task(_hold(limiter, "a", release, started, f"a{i}")) for i in range(5)]
    await asyncio.sleep(0.01)
    assert started == ["a0", "a1"]
    assert (limiter.in_flight("a"), limiter.waiting("a")) == (2, 3)

    other = asyncio.create_task(_hold(limiter, "b", asyncio.Event(), started, "b0"))
    await asyncio.sleep(0.01)
    assert started[-1] == "b0"  # not behind a's queue
    assert limiter.in_flight("b") == 1
    other.cancel()

    release.set()
    await asyncio.gather(*flood)
    assert started[:2] + started[3:] == ["a0", "a1", "a2", "a3", "a4"]  # a's waiting calls, in order
    assert limiter.over_cap == 0
    await asyncio.sleep(0)
    assert limiter._places == {}  # nothing in flight: nothing kept


async def test_a_freed_place_goes_to_the_longest_waiting_call_not_to_a_newcomer():
    limiter = DeveloperLimiter(per_developer=1)
    first_done = asyncio.Event()
    order: list[str] = []
    first = asyncio.create_task(_hold(limiter, "a", first_done, order, "first"))
    await asyncio.sleep(0.01)
    waiting = asyncio.create_task(_hold(limiter, "a", asyncio.Event(), order, "waiting"))
    await asyncio.sleep(0.01)
    first_done.set()
    await first
    # The place is handed on when it is freed: a call arriving now finds it taken.
    late = asyncio.create_task(_hold(limiter, "a", asyncio.Event(), order, "late"))
    await asyncio.sleep(0.01)
    assert order == ["first", "waiting"]
    assert (limiter.in_flight("a"), limiter.waiting("a")) == (1, 1)
    for task in (waiting, late):
        task.cancel()
    await asyncio.gather(waiting, late, return_exceptions=True)
    assert limiter._places == {}


async def test_a_call_that_waited_all_its_attempt_can_spare_goes_ahead_over_the_cap():
    limiter = DeveloperLimiter(per_developer=1)
    async with limiter.place("a", LONG):
        async with limiter.place("a", max_wait=0.05):
            assert limiter.in_flight("a") == 2
        assert limiter.over_cap == 1
        assert limiter.waiting("a") == 0
    assert limiter._places == {}


async def test_a_call_cancelled_while_waiting_leaves_no_place_taken():
    limiter = DeveloperLimiter(per_developer=1)
    release = asyncio.Event()
    holder = asyncio.create_task(_hold(limiter, "a", release, [], "holder"))
    await asyncio.sleep(0.01)
    waiter = asyncio.create_task(_hold(limiter, "a", asyncio.Event(), [], "waiter"))
    await asyncio.sleep(0.01)
    waiter.cancel()
    await asyncio.gather(waiter, return_exceptions=True)
    assert limiter.waiting("a") == 0
    release.set()
    await holder
    assert limiter._places == {}


async def test_no_cap_and_no_developer_mean_no_waiting():
    uncapped = DeveloperLimiter(per_developer=0)
    async with uncapped.place("a", 0), uncapped.place("a", 0):
        assert uncapped.in_flight("a") == 0
    capped = DeveloperLimiter(per_developer=1)
    async with capped.place(None, 0), capped.place(None, 0):
        assert capped.over_cap == 0


def test_a_call_waits_only_what_its_attempt_can_spare_beyond_its_own_deadline():
    # 10 s deadline in a 45 s attempt, 5 s gone: 45 - 5 - 10 - margin
    assert spare_seconds(45, 5, 10) == 30 - MARGIN_SECONDS
    assert spare_seconds(15, 0, 15) == 0  # no slack: no wait
    assert spare_seconds(None, 0, 10) == 0
    # No deadline of its own (a model call): a quarter of the attempt
    assert spare_seconds(60, 0, None) == 15 - MARGIN_SECONDS


def test_whose_call_reads_the_developer_and_deadline_from_each_capped_call():
    model = ModelRequest(None, [], {}, [], None, None, "t:main[0]", Owner("dev-1"))
    assert whose_call(CALL_MODEL, model) == ("dev-1", None)
    scope = {"developer_id": "dev-2", "agent_id": None, "nonce": "n"}
    api = {"method": "GET", "url": "http://x", "timeout": 3, "secrets": scope}
    assert whose_call(CALL_API, api) == ("dev-2", 3.0)
    assert whose_call(CALL_API, {"method": "GET", "url": "http://x"}) == (None, 60.0)  # default deadline
    integration = IntegrationCallRequest("brave", "search", {}, {}, 20.0, "k", scope)  # type: ignore[arg-type]
    assert whose_call(CALL_INTEGRATION, integration) == ("dev-2", 20.0)
    assert whose_call(CALL_SYSTEM, {}) is None  # Mint's own operations are not capped


async def test_a_freed_place_in_the_worker_goes_to_the_developer_with_the_fewest_calls_in_flight():
    # No cap per developer: only the worker's 2 places. A holds both and has 3 more waiting; B's one call
    # came last, and is the next to run, not after A's (Temporal's own local activity slots would be FIFO).
    limiter = DeveloperLimiter(per_developer=0, in_worker=2)
    releases = {name: asyncio.Event() for name in ("a0", "a1", "a2", "a3", "a4", "b0")}
    started: list[str] = []

    async def call(developer: str, name: str) -> None:
        async with limiter.place(developer, LONG, in_worker=True):
            started.append(name)
            await releases[name].wait()

    calls = [asyncio.create_task(call("a", f"a{i}")) for i in range(5)]
    await asyncio.sleep(0.01)
    calls.append(asyncio.create_task(call("b", "b0")))
    await asyncio.sleep(0.01)
    assert started == ["a0", "a1"] and limiter.running_in_worker == 2
    releases["a0"].set()
    await asyncio.sleep(0.01)
    assert started == ["a0", "a1", "b0"]  # b has none in flight: its call goes before a's waiting ones
    releases["a1"].set()
    await asyncio.sleep(0.01)
    assert started[-1] == "a2"  # then a's, in their order
    for event in releases.values():
        event.set()
    await asyncio.gather(*calls)
    assert started == ["a0", "a1", "b0", "a2", "a3", "a4"]
    assert limiter._places == {} and limiter.running_in_worker == 0 and limiter.over_cap == 0


async def test_calls_through_the_queue_take_no_place_in_the_worker_and_the_cap_holds_across_both():
    limiter = DeveloperLimiter(per_developer=2, in_worker=1)
    async with limiter.place("a", LONG, in_worker=True), limiter.place("b", LONG, in_worker=False):
        assert limiter.running_in_worker == 1
        async with limiter.place("a", LONG, in_worker=False):  # a's second, through the queue: it fits
            assert limiter.in_flight("a") == 2
            assert limiter.running_in_worker == 1
            async with limiter.place("a", max_wait=0.05):  # a's third: over the cap after its wait
                assert limiter.over_cap == 1
    assert limiter._places == {} and limiter.running_in_worker == 0


async def test_a_call_without_a_developer_counts_only_against_the_workers_places():
    limiter = DeveloperLimiter(per_developer=1, in_worker=1)
    async with limiter.place(None, LONG, in_worker=True):
        assert limiter.running_in_worker == 1
        async with limiter.place(None, max_wait=0.05, in_worker=True):
            assert limiter.over_cap == 1  # the worker's one place was taken: it waited, then went ahead
        async with limiter.place(None, 0):  # through the queue, no developer: nothing to wait for
            pass
    assert limiter._places == {} and limiter.running_in_worker == 0


async def test_a_batch_of_calls_runs_with_the_workers_limiter_to_admit_each_call_itself():
    """The interceptor takes no place for a batch (activities/call_batches.py takes one per call) and lends
    it the worker's limiter while it runs."""
    limiter, seen = DeveloperLimiter(per_developer=1), []

    class Next:
        async def execute_activity(self, input):
            seen.append((BATCH_LIMITER.get(), limiter.in_flight("developer")))

    batch = CallBatch(CALL_API, [], 1, BatchRetry(1, 1.0, 2.0, 1.0), "execution", "developer")
    await _Inbound(Next(), limiter, None)._admitted(SimpleNamespace(), SimpleNamespace(args=[batch]))
    assert seen == [(limiter, 0)]
    assert BATCH_LIMITER.get() is None  # only while the batch runs
