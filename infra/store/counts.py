"""Counts across every tenant, for the operator's metrics (never for a tenant's request)."""

from __future__ import annotations

import asyncpg

from infra.store.tenancy import acting_as


async def live_executions(pool: asyncpg.Pool) -> dict[str, int]:
    """Executions in each live status, every developer's. The WHERE matches the partial index
    executions_in_flight (migration 0009), so the count reads only live executions, however many ended."""
    with acting_as(None):  # the owner's role: row-level security would show one tenant's rows only
        rows = await pool.fetch(
            "SELECT status, count(*) AS n FROM executions "
            "WHERE status IN ('queued', 'starting', 'running', 'awaiting_input') GROUP BY status"
        )
    return {row["status"]: row["n"] for row in rows}
