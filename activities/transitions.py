"""The transition writer: appends a batch of transitions and updates the execution in one transaction."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.heartbeat import heartbeating
from activities.run_records import ExecutionEnded, record_run_steps, row_columns
from contracts.calls import CallBatch, RecordedAnswer, WorkerCall
from contracts.json import JsonValue
from contracts.temporal import MARK_FAILED, WRITE_TRANSITIONS
from contracts.transitions import (
    TERMINAL_STATUSES,
    InvalidTransition,
    TransitionBatch,
    TransitionRow,
    check_sequence,
)
from infra.store.db_errors import PERMANENT, explain
from infra.store.tables import Store
from infra.telemetry.metrics import Metrics
from infra.telemetry.traces import build_trace
from infra.telemetry.tracing import Tracing
from infra.temporal import errors
from infra.temporal.payload_json import PayloadEncoder

log = logging.getLogger(__name__)


@dataclass
class Written:
    """The rows a write added, and when the execution's transition before them was made."""

    rows: list[TransitionRow]
    before: datetime | None

    def step_durations(self) -> Iterator[tuple[str, float]]:
        """(kind, seconds) for each row that ends a step: the time since the execution's transition before it.
        (Steps whose transitions share a workflow task, such as a run of pure steps, share its timestamp.)"""
        before = self.before
        for row in self.rows:
            at = datetime.fromisoformat(row["created_at"])
            kind = step_kind(row)
            if kind is not None and before is not None:
                yield kind, max(0.0, (at - before).total_seconds())
            before = at


def step_kind(row: TransitionRow) -> str | None:
    """The kind of step a transition ends, as far as the transition shows it (it does not name the step's
    kind): `prompt` (a model's answer), `tool_call` (a tool's or a search's answer), `wait_for_input` (the
    resume: the time waited), `log`, and `other` (pure steps, sleeps, fan-outs, yields). None for a
    transition that ends no step (init, wait, finish, error, ...)."""
    if row["type"] == "resume":
        return "wait_for_input"
    if row["type"] != "step":
        return None
    metadata = row["metadata"] or {}
    if "usage" in metadata:
        return "prompt"
    if "tool" in metadata or "attempts" in metadata:
        return "tool_call"
    return "log" if "log" in metadata else "other"


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
        raise errors.permanent(f"could not record {what}: a value {explain(exc)}", "BadData") from None


class TransitionWriter:
    def __init__(self, pool: asyncpg.Pool, metrics: Metrics | None = None, tracing: Tracing | None = None):
        self.pool = pool
        self.metrics = metrics
        self.tracing = tracing  # exports an execution's spans when it ends (infra/telemetry/tracing.py)
        self._exports: set[asyncio.Task[None]] = set()

    @activity.defn(name=WRITE_TRANSITIONS)
    async def write_transitions(self, batch: TransitionBatch) -> None:
        """Idempotent: rows are unique on (execution_id, seq), and a retried batch changes nothing. Run in
        the background (a regular activity), it heartbeats, so that a write lost with its worker is retried
        within seconds (contracts/liveness.py)."""
        with _refusing_bad_data(batch):
            async with heartbeating(), self.pool.acquire() as conn, conn.transaction():
                written = await self._append(conn, batch)
        self._observe(batch, written)
        if self.tracing is not None and written is not None and batch.status in TERMINAL_STATUSES:
            # Beside the workflow's end, not before it: a slow read or collector must not delay it.
            task = asyncio.create_task(self._export(batch.developer_id, batch.execution_id))
            self._exports.add(task)
            task.add_done_callback(self._exports.discard)

    async def _export(self, developer_id: str, execution_id: str) -> None:
        """Send an ended execution's spans (its trace, rebuilt from its transitions)."""
        assert self.tracing is not None
        try:
            rows = await Store(self.pool).all_transitions(developer_id, execution_id)
            self.tracing.export_trace(build_trace({"id": execution_id}, rows), execution_id)
        except Exception:  # telemetry never fails an execution; the operator sees why in the log
            log.exception("could not export the trace of execution %s", execution_id)

    async def before_call(self, call: WorkerCall) -> Any | None:
        """For a call in the worker: write the transitions it carries, record the answers it carries, and
        return its own answer if one was recorded (else None); in one transaction, and in one statement
        when it carries no transitions (a fan-out's items, mostly)."""
        with _refusing_bad_data(call.transitions):
            if call.transitions is None:
                return await _record_and_look_up(self.pool, call)
            async with self.pool.acquire() as conn, conn.transaction():
                written = await self._append(conn, call.transitions)
                answer = await _record_and_look_up(conn, call)
        self._observe(call.transitions, written)
        return answer

    async def before_batch(self, batch: CallBatch) -> dict[str, JsonValue]:
        """For a batch of calls in the worker: write the transitions it carries, record the answers it
        carries, and return the answers already recorded for its calls, by call id; in one transaction."""
        ids = [c.call_id for c in batch.calls]
        return await self.before_calls(
            batch.execution_id, batch.developer_id, batch.transitions, batch.answers, ids
        )

    async def before_calls(
        self,
        execution_id: str,
        developer_id: str,
        transitions: TransitionBatch | None,
        answers: list[RecordedAnswer],
        call_ids: list[str],
    ) -> dict[str, JsonValue]:
        """Write `transitions`, record `answers`, and return the answers already recorded for `call_ids`,
        by call id; in one transaction (a batch's or a run of steps' first)."""
        with _refusing_bad_data(transitions):
            if transitions is None:
                return await _record_and_look_up_all(self.pool, execution_id, developer_id, answers, call_ids)
            async with self.pool.acquire() as conn, conn.transaction():
                written = await self._append(conn, transitions)
                found = await _record_and_look_up_all(conn, execution_id, developer_id, answers, call_ids)
        self._observe(transitions, written)
        return found

    async def record_steps(self, batch: TransitionBatch, answers: list[RecordedAnswer]) -> None:
        """A run of steps' transitions so far and its calls' answers, in one statement
        (activities/run_records.py)."""
        with _refusing_bad_data(batch):
            try:
                found = await record_run_steps(self.pool, batch, answers)
            except ExecutionEnded as exc:
                raise ApplicationError(str(exc), type="InvalidTransition", non_retryable=True) from None
        if found is None:
            raise ApplicationError(f"execution {batch.execution_id} does not exist", non_retryable=True)
        last_seq, last_at = found
        fresh = [t for t in batch.transitions if t["seq"] > last_seq]
        if fresh:
            self._observe(batch, Written(fresh, last_at))

    async def record_answers(
        self, execution_id: str, developer_id: str, answers: list[RecordedAnswer]
    ) -> None:
        """Record calls' answers as they come (a batch's), so that a run of the batch again skips them."""
        with _refusing_bad_data(None):
            await _record_and_look_up_all(self.pool, execution_id, developer_id, answers, [])

    async def _append(self, conn: asyncpg.Connection, batch: TransitionBatch) -> Written | None:
        """The batch's new rows and the execution row after them (in the caller's transaction)."""
        execution = await conn.fetchrow(
            # The time of the execution's last transition (a lookup in the unique index on (execution_id,
            # seq)) dates the batch's first step, for the step duration metric.
            "SELECT e.status, e.last_seq, e.last_transition_type, (SELECT t.created_at FROM transitions t "
            "WHERE t.execution_id = e.id AND t.seq = e.last_seq) AS last_at "
            "FROM executions e WHERE e.id = $1 AND e.developer_id = $2 FOR NO KEY UPDATE OF e",
            batch.execution_id,
            batch.developer_id,
        )
        if execution is None:
            raise ApplicationError(f"execution {batch.execution_id} does not exist", non_retryable=True)
        fresh = [t for t in batch.transitions if t["seq"] > execution["last_seq"]]
        if not fresh:
            return None  # already written by an earlier attempt
        try:
            if execution["status"] in TERMINAL_STATUSES:  # ended by the API (e.g. a start it saw fail)
                raise InvalidTransition(f"the execution already ended ({execution['status']})")
            check_sequence(execution["last_transition_type"], [t["type"] for t in fresh])
        except InvalidTransition as exc:
            raise ApplicationError(str(exc), type="InvalidTransition", non_retryable=True) from None
        await _append_rows(conn, batch, fresh)
        return Written(fresh, execution["last_at"])

    def _observe(self, batch: TransitionBatch, written: Written | None) -> None:
        """Count what a committed write added, and how long each step it ends took."""
        if self.metrics is None or written is None:
            return
        self.metrics.record_transitions(
            (t["type"] for t in written.rows), batch.status, written.step_durations()
        )

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
    found = await _record_and_look_up_all(
        db, call.execution_id, call.developer_id, call.answers, [call.call_id]
    )
    return found.get(call.call_id)


async def _record_and_look_up_all(
    db: asyncpg.Pool | asyncpg.Connection,
    execution_id: str,
    developer_id: str,
    answers: list[RecordedAnswer],
    call_ids: list[str],
) -> dict[str, JsonValue]:
    """Record `answers` and return the recorded answers of `call_ids` (those that have one), by call id;
    one statement."""
    rows = await db.fetch(
        """
        WITH recorded AS (
            INSERT INTO call_answers (execution_id, call_id, developer_id, answer)
            SELECT $1, u.call_id, $2, u.answer::jsonb FROM unnest($3::uuid[], $4::text[]) AS u(call_id, answer)
            ON CONFLICT DO NOTHING
        )
        SELECT call_id::text, answer::text FROM call_answers WHERE execution_id = $1 AND call_id = ANY($5::uuid[])
        """,
        execution_id,
        developer_id,
        [a.call_id for a in answers],
        [json.dumps(a.answer, cls=PayloadEncoder) for a in answers],
        call_ids,
    )
    return {row["call_id"]: json.loads(row["answer"]) for row in rows}


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
        *row_columns(fresh),
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
