"""What a run of steps (activities/step_runs.py) records after each call, in one statement: one round trip
where the writer's general transaction (activities/transitions.py) takes five, after every call of a run.

A run's transitions are all `step`s (the execution row is moved on as by one), which may follow any
transition but a terminal one, and carry no model usage or outcome, so the writer's checks reduce to one:
the execution has not ended. The statement locks the execution's row, adds the rows past its last sequence
number and the answers, and moves the row on, all only while the execution is open; it returns what the
execution was before, for the caller to tell a repeated write (nothing new) from a refused one (the
execution ended meanwhile)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import asyncpg

from contracts.calls import RecordedAnswer
from contracts.transitions import TERMINAL_STATUSES, TERMINAL_TYPES, TransitionBatch, TransitionRow
from infra.temporal.payload_json import PayloadEncoder

_RECORD = """
WITH execution AS (
    SELECT e.id, e.status, e.last_seq, e.last_transition_type,
           (SELECT t.created_at FROM transitions t WHERE t.execution_id = e.id AND t.seq = e.last_seq) AS last_at
    FROM executions e WHERE e.id = $1 AND e.developer_id = $2 FOR NO KEY UPDATE OF e
), open AS (
    SELECT * FROM execution
    WHERE status <> ALL($14::text[]) AND last_transition_type IS NOT NULL AND last_transition_type <> ALL($15::text[])
), fresh AS (
    SELECT u.* FROM open o,
        unnest($3::uuid[], $4::int[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[],
               $11::timestamptz[]) AS u(id, seq, type, output, current, next, step_label, metadata, created_at)
    WHERE u.seq > o.last_seq
), inserted AS (
    INSERT INTO transitions (id, execution_id, developer_id, seq, type, output, current, next, step_label,
                             metadata, created_at)
    SELECT f.id, $1, $2, f.seq, f.type, f.output::jsonb, f.current::jsonb, f.next::jsonb, f.step_label,
           f.metadata::jsonb, f.created_at
    FROM fresh f
    ON CONFLICT (execution_id, seq) DO NOTHING
), answered AS (
    INSERT INTO call_answers (execution_id, call_id, developer_id, answer)
    SELECT $1, a.call_id, $2, a.answer::jsonb FROM open, unnest($12::uuid[], $13::text[]) AS a(call_id, answer)
    ON CONFLICT DO NOTHING
), moved AS (
    UPDATE executions x SET status = 'running', last_seq = f.last, last_transition_type = 'step',
           transition_count = x.transition_count + f.added, updated_at = now()
    FROM (SELECT max(seq) AS last, count(*) AS added FROM fresh) f
    WHERE x.id = $1 AND f.added > 0
)
SELECT status, last_seq, last_transition_type, last_at FROM execution
"""


def row_columns(rows: list[TransitionRow]) -> list[list[Any]]:
    """Transition rows as the arrays a statement unnests, column by column: id, seq, type, output, current,
    next, step_label, metadata, created_at (the writer's and a run's statements both read them so)."""
    return [
        [t["id"] for t in rows],
        [t["seq"] for t in rows],
        [t["type"] for t in rows],
        [t["output"] for t in rows],
        [json.dumps(t["current"]) for t in rows],
        [json.dumps(t["next"]) if t["next"] else None for t in rows],
        [t["step_label"] for t in rows],
        [json.dumps(t["metadata"]) for t in rows],
        [datetime.fromisoformat(t["created_at"]) for t in rows],
    ]


class ExecutionEnded(Exception):
    """The execution ended before a run's transitions could be recorded."""


async def record_run_steps(
    db: asyncpg.Pool | asyncpg.Connection, batch: TransitionBatch, answers: list[RecordedAnswer]
) -> tuple[int, datetime | None] | None:
    """Record a run's `step` transitions and its calls' answers; returns the execution's last sequence number
    and the time of its last transition before them (None if it does not exist). Raises ExecutionEnded if
    the execution has ended and some transition was not written yet."""
    rows = batch.transitions
    found = await db.fetchrow(
        _RECORD,
        batch.execution_id,
        batch.developer_id,
        *row_columns(rows),
        [a.call_id for a in answers],
        [json.dumps(a.answer, cls=PayloadEncoder) for a in answers],
        list(TERMINAL_STATUSES),
        list(TERMINAL_TYPES),
    )
    if found is None:
        return None
    last_type = found["last_transition_type"]
    ended = found["status"] in TERMINAL_STATUSES or last_type is None or last_type in TERMINAL_TYPES
    if ended and any(t["seq"] > found["last_seq"] for t in rows):
        raise ExecutionEnded(f"the execution already ended ({found['status']})")
    return found["last_seq"], found["last_at"]
