"""A start marks its execution `starting` without ever queuing behind the worker's first write."""

from __future__ import annotations

import asyncio

from infra.store.tables import Store
from infra.store.tenancy import acting_as
from tests.helpers import queued_execution

HANG_GUARD = 60.0  # guards against a hang (mark_started waiting on the lock); measures nothing


async def _status(store: Store, execution_id: str) -> str:
    return await store.pool.fetchval("SELECT status FROM executions WHERE id = $1", execution_id)


async def test_marking_a_start_skips_a_row_the_worker_holds(store):
    developer, execution_id = await queued_execution(store, "starts")
    async with store.pool.acquire() as worker, worker.transaction():
        # As the transition writer holds it while it writes the first transitions.
        await worker.execute("SELECT 1 FROM executions WHERE id = $1 FOR NO KEY UPDATE", execution_id)
        with acting_as(developer):
            await asyncio.wait_for(store.mark_started(developer, execution_id), HANG_GUARD)
        assert await _status(store, execution_id) == "queued"
    with acting_as(developer):
        await store.mark_started(developer, execution_id)
    assert await _status(store, execution_id) == "starting"


async def test_marking_a_start_never_moves_an_execution_back(store):
    developer, execution_id = await queued_execution(store, "starts")
    await store.pool.execute("UPDATE executions SET status = 'running' WHERE id = $1", execution_id)
    with acting_as(developer):
        await store.mark_started(developer, execution_id)
    assert await _status(store, execution_id) == "running"
