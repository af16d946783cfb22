"""Restarted executions in Postgres: read the original's transitions, and create the new execution with a
copy of those it keeps, in one transaction (so it is never seen half made)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import asyncpg

from contracts.json import JsonObject, JsonValue
from contracts.records.executions import Execution, Transition
from infra.store.execution_records import read_execution, read_transition
from infra.store.rows import record


async def transitions_through(
    pool: asyncpg.Pool, developer_id: str, execution_id: str, transition_id: str
) -> list[Transition]:
    """The execution's transitions up to and including `transition_id`, oldest first ([] if it has no such
    transition): what services/restart_plan.py reads, and create_restarted copies a first part of."""
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
    return [read_transition(record(r)) for r in rows]


async def create_restarted(
    pool: asyncpg.Pool,
    developer_id: str,
    original: Execution,
    input_: JsonValue,
    budget: JsonObject | None,
    keep: Sequence[Transition],
) -> Execution:
    """Insert the new execution (`queued`) of the original's task version, with its metadata, restarted from
    it, already holding copies of the kept transitions (the original's first ones: new ids, the same sequence
    numbers, outputs and times, copied row for row), with its counts and usage to match."""
    execution_id = str(uuid.uuid4())
    usage = [u for t in keep if isinstance(u := t.metadata.get("usage"), dict)]
    last_seq = keep[-1].seq if keep else 0
    async with pool.acquire() as conn, conn.transaction():
        row = await conn.fetchrow(
            """
            INSERT INTO executions (id, developer_id, task_id, task_version, status, input, metadata, budget,
                                    restarted_from, last_seq, last_transition_type, transition_count,
                                    prompt_tokens, completion_tokens, cost, callback_url)
            VALUES ($1, $2, $3, $4, 'queued', $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
            RETURNING *
            """,
            execution_id,
            developer_id,
            original.task_id,
            original.task_version,
            input_,
            original.metadata,
            budget,
            original.id,
            last_seq,
            keep[-1].type if keep else None,
            len(keep),
            sum(int(_count(u.get("prompt_tokens"))) for u in usage),
            sum(int(_count(u.get("completion_tokens"))) for u in usage),
            sum(_count(t.metadata.get("cost")) for t in keep if "usage" in t.metadata),
            original.callback_url,
        )
        await conn.execute(
            "INSERT INTO transitions (id, execution_id, developer_id, seq, type, output, current, next, "
            "step_label, metadata, created_at) "
            "SELECT gen_random_uuid(), $1, developer_id, seq, type, output, current, next, step_label, metadata, "
            "created_at FROM transitions WHERE developer_id = $2 AND execution_id = $3 AND seq <= $4",
            execution_id,
            developer_id,
            original.id,
            last_seq,
        )
    return read_execution(record(row))


def _count(value: JsonValue) -> float:
    """A number a transition's metadata recorded (absent or not a number: 0)."""
    return float(value) if isinstance(value, int | float) else 0.0
