"""How soon a transition reaches an SSE client once its write commits: pushed by Postgres, against polling.

Run: python -m bench.streams   (starts its own embedded Postgres and Temporal dev server)
The transition writer (the worker's activity, called directly) writes one transition at a time to an
execution whose `transitions.stream` a client reads; the delay is from the write's commit returning to the
client reading that event. Two APIs serve the stream, on the same Postgres and event loop: one whose streams
are woken by Postgres notifications (as `mint up` and `mint api` serve), and one whose hub never starts, so
its streams re-read every 200 ms, as every stream did before notifications. The floor is Postgres alone: from
a committed NOTIFY returning to a listening connection receiving it (a notification can arrive before the
sender's commit returns, so this is about 0). What the notification costs the writer: a one-transition
write with the trigger and with the trigger disabled, alternated.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import statistics
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import asyncpg
import httpx
import uvicorn

from activities.transitions import TransitionWriter
from contracts.records.executions import Execution
from contracts.transitions import TransitionBatch, TransitionRow
from infra.settings import Settings
from infra.store.execution_events import ExecutionEvents
from infra.store.tables import AGENTS, Store
from process.stack import api_app
from tests.stack import LocalMint, free_port

WRITES = 100
OLD_POLL_SECONDS = 0.2
rng = random.Random(15)


def _row(seq: int, kind: str) -> TransitionRow:
    where = {"workflow": "main", "step": seq, "scope_id": "main"}
    return {
        "id": str(uuid.uuid4()),
        "seq": seq,
        "type": kind,
        "output": "{}",
        "current": where,
        "next": None,
        "step_label": None,
        "metadata": {},
        "created_at": datetime.now(UTC).isoformat(),
    }


@contextlib.asynccontextmanager
async def _served(app: Any) -> AsyncIterator[str]:
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await serving


async def _read(response: httpx.Response, arrived: dict[int, float]) -> None:
    async for line in response.aiter_lines():
        if line.startswith("id: "):
            arrived[int(line[4:])] = time.perf_counter()


async def _running(store: Store, developer: str, task_id: str) -> Execution:
    """A new execution of the task, `running` (as its worker's first write leaves it)."""
    execution = await store.create_execution(developer, (task_id, 1), {}, {}, None)
    await store.set_execution_status(developer, execution.id, "running", ("queued",))
    return execution


async def _delays(url: str, key: str, store: Store, developer: str, task_id: str) -> list[float]:
    """Milliseconds from each write's commit to its event at the client."""
    execution = await _running(store, developer, task_id)
    writer, committed, arrived = TransitionWriter(store.pool), {}, {}
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as client:
        path = f"/executions/{execution.id}/transitions.stream"
        async with client.stream("GET", path) as response:
            reading = asyncio.create_task(_read(response, arrived))
            for seq in range(1, WRITES + 2):
                kind = "init" if seq == 1 else "finish" if seq == WRITES + 1 else "step"
                status = "succeeded" if kind == "finish" else "running"
                await writer.write_transitions(
                    TransitionBatch(execution.id, developer, [_row(seq, kind)], status)
                )
                committed[seq] = time.perf_counter()
                while seq not in arrived:
                    await asyncio.sleep(0.0005)
                await asyncio.sleep(rng.uniform(0, OLD_POLL_SECONDS))  # anywhere in a poll's interval
            await reading
    return [(arrived[seq] - committed[seq]) * 1000 for seq in range(2, WRITES + 1)]


async def _write_costs(store: Store, developer: str, task_id: str) -> dict[str, list[float]]:
    """Milliseconds per one-transition write with the notifying trigger and without it, alternated."""
    costs: dict[str, list[float]] = {"write, notifying": [], "write, trigger disabled": []}
    writer = TransitionWriter(store.pool)
    variants = [("write, notifying", "ENABLE"), ("write, trigger disabled", "DISABLE")]
    for _ in range(6):
        variants.reverse()  # each goes first in half the rounds
        for name, switch in variants:
            await store.pool.execute(f"ALTER TABLE executions {switch} TRIGGER execution_changed")
            execution_id = (await _running(store, developer, task_id)).id
            for seq in range(1, WRITES // 4 + 1):
                batch = TransitionBatch(
                    execution_id, developer, [_row(seq, "init" if seq == 1 else "step")], "running"
                )
                started = time.perf_counter()
                await writer.write_transitions(batch)
                costs[name].append((time.perf_counter() - started) * 1000)
    await store.pool.execute("ALTER TABLE executions ENABLE TRIGGER execution_changed")
    return costs


async def _notify_floor(url: str) -> dict[str, list[float]]:
    """Milliseconds from a committed NOTIFY returning to a listening connection receiving it, and to that
    connection having made one query after it (the least a stream that re-reads can do)."""
    listener, sender = await asyncpg.connect(url), await asyncpg.connect(url)
    received: asyncio.Queue[float] = asyncio.Queue()
    await listener.add_listener("bench", lambda *_: received.put_nowait(time.perf_counter()))
    notified, read = [], []
    for _ in range(WRITES):
        await sender.execute("SELECT pg_notify('bench', 'x')")
        sent = time.perf_counter()
        notified.append((await received.get() - sent) * 1000)
        await listener.fetchval("SELECT 1")
        read.append((time.perf_counter() - sent) * 1000)
    await listener.close()
    await sender.close()
    return {"floor: NOTIFY to a listener": notified, "floor: NOTIFY to a listener, then one query": read}


def _report(name: str, values: list[float]) -> None:
    ordered = sorted(values)
    p95 = ordered[int(0.95 * (len(ordered) - 1))]
    print(f"  {name:<44} p50 {statistics.median(ordered):7.2f}   p95 {p95:7.2f}")


async def main() -> None:
    local = await LocalMint().start()
    try:
        store = Store(local.pool)
        developer, key = await store.create_developer("bench-streams")
        agent = await store.insert(AGENTS, developer, {"name": "bench"})
        task = await store.save_task(developer, agent.id, None, {"name": "t", "main": []}, "dollar")
        settings = replace(Settings(), rate_limit_per_minute=0, stream_poll_seconds=OLD_POLL_SECONDS)
        results = await _notify_floor(local.database_url)
        async with ExecutionEvents(local.database_url, settings.stream_poll_seconds) as events:
            results |= await _write_costs(store, developer, task.id)  # with a listener, as in production
            async with _served(api_app(local.pool, local.env.client, settings, events)) as url:
                results["pushed (Postgres notifications)"] = await _delays(
                    url, key, store, developer, task.id
                )
        polling = ExecutionEvents(None, OLD_POLL_SECONDS)  # never started: its streams poll
        async with _served(api_app(local.pool, local.env.client, settings, polling)) as url:
            results[f"polled every {OLD_POLL_SECONDS * 1000:g} ms (before)"] = await _delays(
                url, key, store, developer, task.id
            )
    finally:
        await local.close()
    print(
        f"{WRITES} transitions written one at a time (ms; the floor and the stream: from commit to client):"
    )
    for name, values in results.items():
        _report(name, values)


if __name__ == "__main__":
    asyncio.run(main())
