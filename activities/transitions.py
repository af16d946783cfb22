"""The transition writer: appends a batch of transitions and updates the execution in one transaction."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import asyncpg
from temporalio import activity
from temporalio.exceptions import ApplicationError

from contracts.calls import WorkerCall
from contracts.temporal import MARK_FAILED, WRITE_TRANSITIONS
from contracts.transitions import (
    TERMINAL_STATUSES,
    InvalidTransition,
    TransitionBatch,
    TransitionRow,
    check_sequence,
)
from mint.store.db_errors import PERMANENT, explain
from mint.temporal.payload_json import PayloadEncoder


def _usage(transitions: list[TransitionRow]) -> tuple[int, int, float]:
    """Model tokens and cost in these transitions (each model call records its own, exactly once)."""
    prompt = completion = 0
    cost = 0.0
    for transition in transitions:
        metadata = transition["metadata"] or {}
        usage = metadata.get("usage")
        if isinstance(usage, dict):
            prompt += int(usage.get("prompt_tokens") or 0)
            completion += int(usage.get("completion_tokens") or 0)
            cost += float(metadata.get("cost") or 0)
    return prompt, completion, cost


def _steps(batch: TransitionBatch) -> str:
    """The steps a batch records, for an error message: `main[0], main[1]`."""
    steps = dict.fromkeys(f"{t['current']['workflow']}[{t['current']['step']}]" for t in batch.transitions)
    shown = ", ".join(list(steps)[:5]) + (", ..." if len(steps) > 5 else "")
    return f"the transitions of {shown}" if steps else "the execution's status"


@contextlib.contextmanager
def _refusing_bad_data(batch: TransitionBatch | None) -> Iterator[None]:
    """Data Postgres refuses (or that cannot be encoded for it) is refused on every retry the same way: fail
    now, non-retryably, so the execution fails with the reason instead of hanging."""
    try:
        yield
    except (*PERMANENT, ValueError, RecursionError) as exc:
        what = _steps(batch) if batch is not None else "a call's answer"
        raise ApplicationError(
            f"could not record {what}: a value {explain(exc)}", type="BadData", non_retryable=True
        ) from None


class TransitionWriter:
    def __init__(self, pool: asyncpg.Pool):
        self.pool = pool

    @activity.defn(name=WRITE_TRANSITIONS)
    async def write_transitions(self, batch: TransitionBatch) -> None:
        """Idempotent: rows are unique on (execution_id, seq), and a retried batch changes nothing."""
        with _refusing_bad_data(batch):
            async with self.pool.acquire() as conn, conn.transaction():
                await self._append(conn, batch)

    async def before_call(self, call: WorkerCall) -> Any | None:
        """For a call in the worker: write the transitions it carries, record the answers it carries, and
        return its own answer if one was recorded (else None); in one transaction, and in one statement
        when it carries no transitions (a fan-out's items, mostly)."""
        with _refusing_bad_data(call.transitions):
            if call.transitions is None:
                return await _record_and_look_up(self.pool, call)
            async with self.pool.acquire() as conn, conn.transaction():
                await self._append(conn, call.transitions)
                return await _record_and_look_up(conn, call)

    async def _append(self, conn: asyncpg.Connection, batch: TransitionBatch) -> None:
        """The batch's new rows and the execution row after them (in the caller's transaction)."""
        execution = await conn.fetchrow(
            "SELECT status, last_seq, last_transition_type FROM executions "
            "WHERE id = $1 AND developer_id = $2 FOR NO KEY UPDATE",
            batch.execution_id,
            batch.developer_id,
        )
        if execution is None:
            raise ApplicationError(f"execution {batch.execution_id} does not exist", non_retryable=True)
        fresh = [t for t in batch.transitions if t["seq"] > execution["last_seq"]]
        if not fresh:
            return  # already written by an earlier attempt
        try:
            if execution["status"] in TERMINAL_STATUSES:  # ended by the API (e.g. a start it saw fail)
                raise InvalidTransition(f"the execution already ended ({execution['status']})")
            check_sequence(execution["last_transition_type"], [t["type"] for t in fresh])
        except InvalidTransition as exc:
            raise ApplicationError(str(exc), type="InvalidTransition", non_retryable=True) from None
        await _append_rows(conn, batch, fresh)

    @activity.defn(name=MARK_FAILED)
    async def mark_failed(self, batch: TransitionBatch) -> None:
        """The last resort when a batch cannot be written: the execution ends `failed` with the reason."""
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute(
                "UPDATE executions SET status = 'failed', error = $3, updated_at = now() "
                "WHERE id = $1 AND developer_id = $2 AND status NOT IN ('succeeded', 'failed', 'cancelled')",
                batch.execution_id,
                batch.developer_id,
                batch.error,
            )
            await conn.execute("DELETE FROM call_answers WHERE execution_id = $1", batch.execution_id)


async def _record_and_look_up(db: asyncpg.Pool | asyncpg.Connection, call: WorkerCall) -> Any | None:
    """Record the answers `call` carries and return its own recorded answer (None if it has none yet)."""
    found = await db.fetchval(
        """
        WITH recorded AS (
            INSERT INTO call_answers (execution_id, call_id, developer_id, answer)
            SELECT $1, u.call_id, $2, u.answer::jsonb FROM unnest($3::uuid[], $4::text[]) AS u(call_id, answer)
            ON CONFLICT DO NOTHING
        )
        SELECT answer::text FROM call_answers WHERE execution_id = $1 AND call_id = $5
        """,
        call.execution_id,
        call.developer_id,
        [a.call_id for a in call.answers],
        [json.dumps(a.answer, cls=PayloadEncoder) for a in call.answers],
        call.call_id,
    )
    return None if found is None else json.loads(found)


async def _append_rows(conn: asyncpg.Connection, batch: TransitionBatch, fresh: list[TransitionRow]) -> None:
    """The batch's new rows (one a retry already wrote is skipped), and the execution row following its
    newest transition: status, position, counts, usage and outcome; one statement. An execution that ends
    drops its calls' recorded answers (none of its calls can run again)."""
    prompt_tokens, completion_tokens, cost = _usage(fresh)
    await conn.execute(
        """
        WITH inserted AS (
            INSERT INTO transitions (id, execution_id, developer_id, seq, type, output, current, next,
                                     step_label, metadata, created_at)
            SELECT u.id, $1, $2, u.seq, u.type, u.output::jsonb, u.current::jsonb, u.next::jsonb,
                   u.step_label, u.metadata::jsonb, u.created_at
            FROM unnest($3::uuid[], $4::int[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
                        $10::text[], $11::timestamptz[])
                 AS u(id, seq, type, output, current, next, step_label, metadata, created_at)
            ON CONFLICT (execution_id, seq) DO NOTHING
        ), answers_dropped AS (
            DELETE FROM call_answers WHERE execution_id = $1 AND $21::boolean
        )
        UPDATE executions SET status = $12, last_seq = $13, last_transition_type = $14,
               transition_count = transition_count + $15, output = COALESCE($16::jsonb, output),
               error = COALESCE($17, error), prompt_tokens = prompt_tokens + $18,
               completion_tokens = completion_tokens + $19, cost = cost + $20, updated_at = now()
        WHERE id = $1 AND developer_id = $2
        """,
        batch.execution_id,
        batch.developer_id,
        [t["id"] for t in fresh],
        [t["seq"] for t in fresh],
        [t["type"] for t in fresh],
        [t["output"] for t in fresh],
        [json.dumps(t["current"]) for t in fresh],
        [json.dumps(t["next"]) if t["next"] else None for t in fresh],
        [t["step_label"] for t in fresh],
        [json.dumps(t["metadata"]) for t in fresh],
        [datetime.fromisoformat(t["created_at"]) for t in fresh],
        batch.status,
        fresh[-1]["seq"],
        fresh[-1]["type"],
        len(fresh),
        batch.output if batch.status == "succeeded" else None,
        batch.error,
        prompt_tokens,
        completion_tokens,
        cost,
        batch.status in TERMINAL_STATUSES,
    )
