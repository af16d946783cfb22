"""Restarted executions in Postgres: read the original's transitions, and create the new execution with a
copy of those it keeps, in one transaction (so it is never seen half made)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

import asyncpg

from contracts.json import JsonValue
from infra.store.execution_records import Execution, Transition
from infra.store.rows import Row, record


async def transitions_through(
    pool: asyncpg.Pool, developer_id: str, execution_id: str, transition_id: str
) -> list[dict[str, object]]:
    """The execution's transitions up to and including `transition_id`, oldest first ([] if it has no such
    transition): rows, as services/restart_plan.py reads them and create_restarted copies them."""
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
    pool: asyncpg.Pool, developer_id: str, values: Mapping[str, object], keep: Sequence[Row]
) -> Execution:
    """Insert the new execution (`queued`) already holding copies of the kept transitions (new ids, the same
    sequence numbers, outputs and times), with its counts and usage to match."""
    execution_id = str(uuid.uuid4())
    kept = [Transition.of(r) for r in keep]
    usage = [u for t in kept if isinstance(u := t.metadata.get("usage"), dict)]
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
            kept[-1].seq if kept else 0,
            kept[-1].type if kept else None,
            len(kept),
            sum(int(_count(u.get("prompt_tokens"))) for u in usage),
            sum(int(_count(u.get("completion_tokens"))) for u in usage),
            sum(_count(t.metadata.get("cost")) for t in kept if "usage" in t.metadata),
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
    return Execution.of(record(row))


def _count(value: JsonValue) -> float:
    """A number a transition's metadata recorded (absent or not a number: 0)."""
    return float(value) if isinstance(value, int | float) else 0.0
