"""Restarted executions in Postgres: read the original's transitions, and create the new execution with a
copy of those it keeps, in one transaction (so it is never seen half made)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import asyncpg

from infra.store.rows import record


async def transitions_through(
    pool: asyncpg.Pool, developer_id: str, execution_id: str, transition_id: str
) -> list[dict[str, Any]]:
    """The execution's transitions up to and including `transition_id`, oldest first ([] if it has no such
    transition)."""
    rows = await pool.fetch(
        """
        SELECT t.* FROM transitions t
        WHERE t.developer_id = $1 AND t.execution_id = $2
          AND t.seq <= (SELECT seq FROM transitions WHERE execution_id = $2 AND id = $3 AND developer_id = $1)
        ORDER BY t.seq
        """,
        developer_id,
        execution_id,
        transition_id,
    )
    return [record(r) for r in rows]


async def create_restarted(
    pool: asyncpg.Pool, developer_id: str, values: Mapping[str, object], keep: list[dict[str, Any]]
) -> dict[str, object]:
    """Insert the new execution (`queued`) already holding copies of the kept transitions (new ids, the same
    sequence numbers, outputs and times), with its counts and usage to match."""
    execution_id = str(uuid.uuid4())
    usage = [r["metadata"].get("usage") for r in keep if isinstance(r["metadata"].get("usage"), dict)]
    async with pool.acquire() as conn, conn.transaction():
        row = await conn.fetchrow(
            """
            INSERT INTO executions (id, developer_id, task_id, task_version, status, input, metadata, budget,
                                    restarted_from, last_seq, last_transition_type, transition_count,
                                    prompt_tokens, completion_tokens, cost)
            VALUES ($1, $2, $3, $4, 'queued', $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
            RETURNING *
            """,
            execution_id,
            developer_id,
            values["task_id"],
            values["task_version"],
            values["input"],
            values["metadata"],
            values["budget"],
            values["restarted_from"],
            keep[-1]["seq"] if keep else 0,
            keep[-1]["type"] if keep else None,
            len(keep),
            sum(int(u.get("prompt_tokens") or 0) for u in usage),
            sum(int(u.get("completion_tokens") or 0) for u in usage),
            sum(float(r["metadata"].get("cost") or 0) for r in keep if "usage" in r["metadata"]),
        )
        await conn.executemany(
            "INSERT INTO transitions (id, execution_id, developer_id, seq, type, output, current, next, "
            "step_label, metadata, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            [
                (
                    str(uuid.uuid4()),
                    execution_id,
                    developer_id,
                    r["seq"],
                    r["type"],
                    r["output"],
                    r["current"],
                    r["next"],
                    r["step_label"],
                    r["metadata"],
                    r["created_at"],
                )
                for r in keep
            ],
        )
    return record(row)
