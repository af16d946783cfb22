"""What the SSE streams of an execution send: its transitions as they are written, and the execution each
time it changes. They wait for a change of their execution (pushed by Postgres:
infra/store/execution_events.py), not on a timer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

from contracts.records.executions import Execution, Transition
from contracts.transitions import TERMINAL_STATUSES, TERMINAL_TYPES
from infra.store.step_streams import StepStreams
from services.clients import Clients
from services.executions.deltas import Delta, LiveDeltas

# A quiet stream sends a keep-alive this often, and reads at most this many transitions at once.
KEEPALIVE_SECONDS = 15.0
READ_BATCH = 500

Disconnected = Callable[[], Awaitable[bool]]  # whether the client has gone


async def transition_feed(
    clients: Clients, developer: str, execution_id: str, after: int, gone: Disconnected
) -> AsyncIterator[Transition | Delta | None]:
    """The execution's transitions after seq `after`, ending after the last one, and the live text of its
    streamed prompt steps (services/executions/deltas.py): once caught up, the text so far, then new text as
    it is written, each before the transitions that follow it. None is a keep-alive."""
    loop = asyncio.get_running_loop()
    live, caught_up = LiveDeltas(StepStreams(clients.store.pool), developer, execution_id), False
    with clients.events.watch(
        execution_id
    ) as watch:  # before the first read: a change made after it wakes the watch
        keepalive_at = loop.time() + KEEPALIVE_SECONDS
        while not await gone():
            for delta in await live.new() if caught_up else []:
                yield delta  # read before the transitions: a call's last text comes before its step's
            status, batch = await clients.store.transitions_after(developer, execution_id, after, READ_BATCH)
            for transition in batch:
                after = transition.seq
                yield transition
                if transition.type in TERMINAL_TYPES:
                    return
            if batch:
                keepalive_at = loop.time() + KEEPALIVE_SECONDS
            if len(batch) == READ_BATCH:
                continue  # the rest of a long run, at once
            if not caught_up:
                caught_up = True
                for delta in await live.so_far():
                    yield delta
            # An execution's status changes in the transaction that writes its transitions, and was read in the
            # same snapshot: ended then, it has no more to come (a resume point past its end, or one that failed
            # without an ending transition). Without this check such a stream would never end.
            if status is None or status in TERMINAL_STATUSES:
                return
            while not await watch.wait_until(keepalive_at):
                keepalive_at = loop.time() + KEEPALIVE_SECONDS
                yield None


async def status_feed(
    clients: Clients, developer: str, execution_id: str, seen: int, gone: Disconnected
) -> AsyncIterator[Execution]:
    """The execution each time its status or transition count changes (first at once, unless `seen` is its
    count), and again as a keep-alive when quiet; ending when it ends."""
    # No comment keep-alives here: the julep SDK parses every blank-line-terminated block as JSON once an
    # `id:` was sent, so keep-alives re-send the current state instead (as last read: had it changed since,
    # the watch would have woken).
    loop = asyncio.get_running_loop()
    with clients.events.watch(execution_id) as watch:
        first, woke = True, True
        keepalive_at = loop.time() + KEEPALIVE_SECONDS
        execution: Execution | None = None
        while not await gone():
            if woke or execution is None:
                execution = await clients.store.get_execution(developer, execution_id)
                if execution is None:
                    return
            count = execution.transition_count
            if count != seen or (first and not seen) or not woke:  # changed, first, or a keep-alive
                seen, keepalive_at = count, loop.time() + KEEPALIVE_SECONDS
                yield execution
            first = False
            if execution.status in TERMINAL_STATUSES:
                return
            woke = await watch.wait_until(keepalive_at)
