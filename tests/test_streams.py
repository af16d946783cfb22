"""Execution streams are pushed: Postgres notifies the API of each write (infra/store/execution_events.py).

Every stack and hub here re-reads on a timer only every POLL_NEVER seconds, longer than any test waits: a
stream that gets a write did so because it was notified. The waits below guard against hangs (a stream that
is never woken); none of them measures a delay (bench/streams.py does).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest_asyncio

from infra.store.execution_events import APPLICATION_NAME, CHANNEL, ExecutionEvents
from infra.store.tables import Store
from infra.store.tenancy import acting_as
from tests.conftest import temporal_address
from tests.helpers import create_agent, create_task, queued_execution, start, transitions, wait_for_status
from tests.stack import BackgroundStack

POLL_NEVER = 600.0
HANG_GUARD = 60.0

ASK = {
    "name": "ask",
    "main": [{"wait_for_input": {"info": {"question": "a number?"}}}, {"return": {"doubled": "$ _.n * 2"}}],
}


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def push_stack(postgres_url, temporal_env) -> AsyncIterator[BackgroundStack]:
    async with BackgroundStack(
        postgres_url,
        temporal_address(temporal_env),
        task_queue=f"streams-{uuid.uuid4()}",
        stream_poll_seconds=POLL_NEVER,
    ) as stack:
        yield stack


@pytest_asyncio.fixture(loop_scope="session")
async def papi(push_stack, api_key) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(
        base_url=push_stack.url, headers={"Authorization": f"Bearer {api_key}"}, timeout=HANG_GUARD
    ) as client:
        yield client


async def sse_events(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """Each event of an SSE response ({"id", "event", "data"}), keep-alive comments left out."""
    event: dict[str, Any] = {}
    async for line in response.aiter_lines():
        if not line:
            if event:
                yield event
            event = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(": ")
            event[name] = json.loads(value) if name == "data" else value


async def _awaiting_input(api: httpx.AsyncClient) -> str:
    task = await create_task(api, (await create_agent(api))["id"], ASK)
    execution = await start(api, task["id"])
    waiting = await wait_for_status(api, execution["id"], {"awaiting_input", "failed"})
    assert waiting["status"] == "awaiting_input", waiting
    return execution["id"]


async def _resume(api: httpx.AsyncClient, execution_id: str) -> None:
    response = await api.put(f"/executions/{execution_id}", json={"status": "running", "input": {"n": 21}})
    assert response.status_code == 200, response.text


async def _transitions_after_resume(api: httpx.AsyncClient, execution_id: str) -> list[str]:
    """The stream's transitions; the execution is resumed once the stream has sent those already written."""
    types = []
    async with api.stream("GET", f"/executions/{execution_id}/transitions.stream") as response:
        async for event in sse_events(response):
            types.append(event["data"]["type"])
            if event["data"]["type"] == "wait":
                await _resume(api, execution_id)
    return types


async def test_the_transition_stream_is_pushed_the_writes_after_it_opened(papi):
    execution_id = await _awaiting_input(papi)
    async with asyncio.timeout(HANG_GUARD):
        types = await _transitions_after_resume(papi, execution_id)
    assert types[:2] == ["init", "wait"] and types[-1] == "finish", types
    assert types == [row["type"] for row in await transitions(papi, execution_id)]


async def test_the_status_stream_is_pushed_each_change(papi):
    execution_id = await _awaiting_input(papi)
    statuses = []
    async with asyncio.timeout(HANG_GUARD):
        async with papi.stream("GET", f"/executions/{execution_id}/status.stream") as response:
            async for event in sse_events(response):
                statuses.append(event["data"]["status"])
                if len(statuses) == 1:
                    await _resume(papi, execution_id)
    assert statuses[0] == "awaiting_input" and statuses[-1] == "succeeded", statuses
    assert event["data"]["output"] == {"doubled": 42}


async def _listeners(store: Store) -> dict[int, str]:
    rows = await store.pool.fetch(
        "SELECT pid, query FROM pg_stat_activity WHERE application_name = $1", APPLICATION_NAME
    )
    return {row["pid"]: row["query"] for row in rows}


async def _listening_again(store: Store, killed: set[int]) -> list[int]:
    """The listeners that connected since, and listen: a new connection sends its probe once it listens."""
    return [
        pid for pid, query in (await _listeners(store)).items() if pid not in killed and "pg_notify" in query
    ]


async def test_a_stream_is_pushed_writes_after_its_listener_was_killed(papi, store):
    execution_id = await _awaiting_input(papi)
    async with (
        asyncio.timeout(HANG_GUARD),
        papi.stream("GET", f"/executions/{execution_id}/transitions.stream") as response,
    ):
        events = sse_events(response)
        assert [(await anext(events))["data"]["type"] for _ in range(2)] == ["init", "wait"]
        # Every API process's listener (this stack's among them) is cut off; each reconnects by itself.
        killed = set(await _listeners(store))
        assert killed
        await store.pool.execute("SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) pid", list(killed))
        # Listening again once a new connection has sent its probe (it listens before that).
        while len(await _listening_again(store, killed)) < len(killed):
            await asyncio.sleep(0.05)
        await _resume(papi, execution_id)
        rest = [event["data"]["type"] async for event in events]
    assert ["init", "wait", *rest] == [row["type"] for row in await transitions(papi, execution_id)]
    assert rest[0] == "resume" and rest[-1] == "finish", rest


# The hub alone, against the test Postgres --------------------------------------------------------------------


@pytest_asyncio.fixture(loop_scope="session")
async def hub(postgres_url) -> AsyncIterator[ExecutionEvents]:
    async with ExecutionEvents(postgres_url, poll_seconds=POLL_NEVER) as events:
        assert events.listening
        yield events


async def _notify(store: Store, *payloads: str) -> None:
    for payload in payloads:  # one transaction each: Postgres folds repeats within one
        await store.pool.execute("SELECT pg_notify($1, $2)", CHANNEL, payload)


def _now() -> float:
    return asyncio.get_running_loop().time()


async def test_many_notifications_wake_a_watch_once(hub, store):
    watched, sentinel = str(uuid.uuid4()), str(uuid.uuid4())
    with hub.watch(watched) as watch, hub.watch(sentinel) as last:
        await _notify(store, *[watched] * 20, sentinel)
        # One session's notifications arrive in order: once the last one is in, the others are too.
        assert await last.wait_until(_now() + HANG_GUARD)
        assert await watch.wait_until(_now())
        assert not await watch.wait_until(_now())  # the 20 were one wake-up
    assert hub._watches == {}  # a notification for these ids now costs a lookup that finds nothing


async def test_a_status_change_notifies_and_the_reconcilers_claim_does_not(hub, store):
    developer, execution_id = await queued_execution(store, "streams")
    sentinel = str(uuid.uuid4())
    with hub.watch(execution_id) as watch, hub.watch(sentinel) as last:
        with acting_as(developer):  # as the API changes it: the tenant's role, under row-level security
            assert await store.set_execution_status(developer, execution_id, "starting", ("queued",))
        assert await watch.wait_until(_now() + HANG_GUARD)
        await store.pool.execute("UPDATE executions SET reconciled_at = now() WHERE id = $1", execution_id)
        await _notify(store, sentinel)
        assert await last.wait_until(_now() + HANG_GUARD)
        assert not await watch.wait_until(_now())


async def test_the_hub_listens_again_after_its_connection_is_killed(hub, store):
    watched = str(uuid.uuid4())
    with hub.watch(watched) as watch:
        killed = hub.listener_pid
        await store.pool.execute("SELECT pg_terminate_backend($1)", killed)
        assert await watch.wait_until(_now() + HANG_GUARD)  # every stream re-reads when the connection drops
        async with asyncio.timeout(HANG_GUARD):
            while not hub.listening:
                assert await watch.wait_until(_now() + HANG_GUARD)  # ...and again once it is back
        assert hub.listener_pid not in (None, killed)
        while await watch.wait_until(_now()):
            pass  # the wake-ups of the reconnection, read
        await _notify(store, watched)
        assert await watch.wait_until(_now() + HANG_GUARD)


async def test_a_hub_never_started_polls():
    events = ExecutionEvents(None, poll_seconds=0.01)
    with events.watch(str(uuid.uuid4())) as watch:
        assert not events.listening
        assert await watch.wait_until(_now() + HANG_GUARD)  # a poll, not the deadline
        assert not await watch.wait_until(_now())
