"""Executions and their transitions as the API and the reconciler read and end them (the workflow's own
writes are activities/transitions.py's)."""

from __future__ import annotations

import asyncpg

from contracts.failures import error_type_of
from contracts.json import JsonObject, JsonValue
from contracts.records.executions import Execution, OpenWait, QuietExecution, Transition
from contracts.records.pages import Page
from contracts.transitions import TERMINAL_STATUSES, check_sequence
from infra.store.execution_records import (
    read_execution,
    read_open_wait,
    read_quiet_execution,
    read_transition,
)
from infra.store.rows import Conflict, PoolUser, new_id, record


class Executions(PoolUser):
    async def create_execution(
        self,
        developer_id: str,
        task: tuple[str, int],
        input_: JsonValue,
        metadata: JsonObject,
        budget: JsonObject | None,
        idempotency_key: str | None = None,
        callback_url: str | None = None,
    ) -> Execution:
        """A new `queued` execution of the task version `task` (id, version); Conflict if another holds the
        idempotency key."""
        try:
            row = await self.pool.fetchrow(
                "INSERT INTO executions (id, developer_id, task_id, task_version, status, input, metadata, "
                "idempotency_key, budget, callback_url) VALUES ($1, $2, $3, $4, 'queued', $5, $6, $7, $8, $9) RETURNING *",
                new_id(),
                developer_id,
                *task,
                input_,
                metadata,
                idempotency_key,
                budget,
                callback_url,
            )
        except asyncpg.UniqueViolationError:
            raise Conflict("already exists") from None
        return read_execution(record(row))

    async def get_execution(self, developer_id: str, execution_id: str) -> Execution | None:
        row = await self.pool.fetchrow(
            "SELECT * FROM executions WHERE developer_id = $1 AND id = $2", developer_id, execution_id
        )
        return None if row is None else read_execution(record(row))

    async def task_executions(self, developer_id: str, task_id: str, page: Page) -> list[Execution]:
        """The executions of one of the developer's tasks (with metadata containing the page's filter)."""
        rows = await self.pool.fetch(
            "SELECT * FROM executions WHERE developer_id = $1 AND task_id = $2 "
            f"AND ($3::jsonb IS NULL OR metadata @> $3::jsonb) ORDER BY {page.order()} LIMIT $4 OFFSET $5",
            developer_id,
            task_id,
            page.metadata_filter or None,
            page.limit,
            page.offset,
        )
        return [read_execution(record(r)) for r in rows]

    async def set_execution_status(
        self,
        developer_id: str,
        execution_id: str,
        status: str,
        only_from: tuple[str, ...],
        error: str | None = None,
    ) -> bool:
        """Move an execution to `status` if it is in one of `only_from` (used around workflow starts)."""
        result: str = await self.pool.execute(
            "UPDATE executions SET status = $3, error = COALESCE($4, error), updated_at = now() "
            "WHERE developer_id = $1 AND id = $2 AND status = ANY($5::text[])",
            developer_id,
            execution_id,
            status,
            error,
            list(only_from),
        )
        return result != "UPDATE 0"

    async def mark_started(self, developer_id: str, execution_id: str) -> None:
        """`queued` -> `starting` once its workflow is started, without waiting: if the worker holds the row
        (its first write, which moves it on anyway), this is skipped rather than queued behind it; waiting
        for that lock was up to 14 ms of a start's answer. The reconciler treats both statuses alike."""
        await self.pool.execute(
            "UPDATE executions SET status = 'starting', updated_at = now() WHERE id = ("
            " SELECT id FROM executions WHERE developer_id = $1 AND id = $2 AND status = 'queued'"
            " FOR NO KEY UPDATE SKIP LOCKED)",
            developer_id,
            execution_id,
        )

    async def executions_in_flight(self, developer_id: str) -> int:
        """How many of the developer's executions have not ended (the API caps them per developer)."""
        found: int = await self.pool.fetchval(
            "SELECT count(*) FROM executions WHERE developer_id = $1 "
            "AND status IN ('queued', 'starting', 'running', 'awaiting_input')",
            developer_id,
        )
        return found

    async def list_executions(
        self, developer_id: str, page: Page, status: str | None = None
    ) -> list[Execution]:
        """The developer's executions across tasks (optionally of one status), each with its task's name."""
        rows = await self.pool.fetch(
            "SELECT e.*, t.name AS task_name FROM executions e JOIN tasks t "
            "ON t.developer_id = e.developer_id AND t.id = e.task_id "
            "WHERE e.developer_id = $1 AND ($2::text IS NULL OR e.status = $2) "
            f"AND ($3::jsonb IS NULL OR e.metadata @> $3::jsonb) ORDER BY {page.order('e')} "
            "LIMIT $4 OFFSET $5",
            developer_id,
            status,
            page.metadata_filter,
            page.limit,
            page.offset,
        )
        return [read_execution(record(r)) for r in rows]

    async def open_waits(self, developer_id: str, execution_id: str) -> list[OpenWait]:
        """The execution's waits that no `resume` answered yet, oldest first (what GET /executions/{id}
        lists, and what an execution's webhook sends when it awaits input)."""
        rows = await self.pool.fetch(
            """
            SELECT w.* FROM transitions w
            WHERE w.developer_id = $1 AND w.execution_id = $2 AND w.type = 'wait'
              AND NOT EXISTS (SELECT 1 FROM transitions r WHERE r.execution_id = w.execution_id
                              AND r.type = 'resume' AND (r.metadata->>'wait_seq')::int = w.seq)
            ORDER BY w.seq
            """,
            developer_id,
            execution_id,
        )
        return [read_open_wait(record(r)) for r in rows]

    # The reconciler, across developers: it ends executions, it never reads their data -----------------

    async def claim_quiet_executions(self, quiet_seconds: float, limit: int) -> list[QuietExecution]:
        """Live executions unchanged for `quiet_seconds`, least recently checked first, claimed for a check
        (SKIP LOCKED and the timestamp keep several workers from checking the same ones)."""
        rows = await self.pool.fetch(
            """
            UPDATE executions SET reconciled_at = now() WHERE id IN (
                SELECT id FROM executions
                WHERE status IN ('queued', 'starting', 'running', 'awaiting_input')
                  AND updated_at < now() - make_interval(secs => $1)
                  AND (reconciled_at IS NULL OR reconciled_at < now() - make_interval(secs => $1))
                ORDER BY reconciled_at NULLS FIRST LIMIT $2 FOR UPDATE SKIP LOCKED)
            RETURNING id, developer_id, status, task_id, callback_url
            """,
            quiet_seconds,
            limit,
        )
        return [read_quiet_execution(record(r)) for r in rows]

    async def end_execution(
        self, developer_id: str, execution_id: str, kind: str, status: str, error: str | None
    ) -> int | None:
        """Append the final transition of an execution whose workflow cannot (it is closed or never ran):
        its seq (0 for an execution that had none, which gets no transition), or None if it had ended."""
        async with self.pool.acquire() as conn, conn.transaction():
            row = await conn.fetchrow(
                "SELECT status, last_seq, last_transition_type FROM executions "
                "WHERE developer_id = $1 AND id = $2 FOR UPDATE",
                developer_id,
                execution_id,
            )
            if row is None or row["status"] in TERMINAL_STATUSES:
                return None
            if row["last_seq"]:  # it has transitions: the ending one follows them, checked like any other
                check_sequence(row["last_transition_type"], [kind])
                current = await conn.fetchval(
                    "SELECT current FROM transitions WHERE execution_id = $1 AND seq = $2",
                    execution_id,
                    row["last_seq"],
                )
                await conn.execute(
                    "INSERT INTO transitions (id, execution_id, developer_id, seq, type, output, current, metadata) "
                    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                    new_id(),
                    execution_id,
                    developer_id,
                    row["last_seq"] + 1,
                    kind,
                    {"error": error} if error else None,
                    current,
                    {"error_type": error_type} if (error_type := error_type_of(error or "")) else None,
                )
            await conn.execute(
                "UPDATE executions SET status = $3, error = COALESCE($4, error), updated_at = now(), "
                "last_seq = last_seq + $5, last_transition_type = COALESCE($6, last_transition_type), "
                "transition_count = transition_count + $5 WHERE developer_id = $1 AND id = $2",
                developer_id,
                execution_id,
                status,
                error,
                1 if row["last_seq"] else 0,
                kind if row["last_seq"] else None,
            )
        return row["last_seq"] + 1 if row["last_seq"] else 0

    async def note_cancel_reason(self, developer_id: str, execution_id: str, reason: str) -> None:
        """Keep the reason a client gave for cancelling (as the execution's error text)."""
        await self.pool.execute(
            "UPDATE executions SET error = $3 WHERE developer_id = $1 AND id = $2 AND error IS NULL",
            developer_id,
            execution_id,
            f"cancelled: {reason}",
        )

    async def execution_by_key(self, developer_id: str, task_id: str, key: str) -> Execution | None:
        row = await self.pool.fetchrow(
            "SELECT * FROM executions WHERE developer_id = $1 AND task_id = $2 AND idempotency_key = $3",
            developer_id,
            task_id,
            key,
        )
        return None if row is None else read_execution(record(row))

    async def list_transitions(
        self,
        developer_id: str,
        execution_id: str,
        page: Page,
        after_seq: int = 0,
        scope_id: str | None = None,
    ) -> list[Transition]:
        direction = "ASC" if page.direction == "asc" else "DESC"
        rows = await self.pool.fetch(
            "SELECT * FROM transitions WHERE developer_id = $1 AND execution_id = $2 AND seq > $3 "
            f"AND ($4::text IS NULL OR current->>'scope_id' = $4) ORDER BY seq {direction} LIMIT $5 OFFSET $6",
            developer_id,
            execution_id,
            after_seq,
            scope_id,
            page.limit,
            page.offset,
        )
        return [read_transition(record(r)) for r in rows]

    async def all_transitions(self, developer_id: str, execution_id: str) -> list[Transition]:
        """Every transition of an execution, oldest first (what its trace is built from)."""
        rows = await self.pool.fetch(
            "SELECT * FROM transitions WHERE developer_id = $1 AND execution_id = $2 ORDER BY seq",
            developer_id,
            execution_id,
        )
        return [read_transition(record(r)) for r in rows]

    async def transitions_after(
        self, developer_id: str, execution_id: str, after_seq: int, limit: int
    ) -> tuple[str | None, list[Transition]]:
        """The execution's status and up to `limit` of its transitions after `after_seq`, oldest first, read
        in one statement (so in one snapshot: an ended status comes with every transition it ended after);
        (None, []) if the developer has no such execution. What a transition stream reads on each wake-up."""
        rows = await self.pool.fetch(
            """
            SELECT e.status AS execution_status, t.* FROM executions e
            LEFT JOIN LATERAL (SELECT * FROM transitions WHERE execution_id = e.id AND seq > $3
                               ORDER BY seq LIMIT $4) t ON true
            WHERE e.developer_id = $1 AND e.id = $2
            """,
            developer_id,
            execution_id,
            after_seq,
            limit,
        )
        if not rows:
            return None, []
        found = [read_transition(record(r)) for r in rows if r["id"] is not None]
        return rows[0]["execution_status"], found

    async def get_transition(
        self, developer_id: str, execution_id: str, transition_id: str
    ) -> Transition | None:
        row = await self.pool.fetchrow(
            "SELECT * FROM transitions WHERE developer_id = $1 AND execution_id = $2 AND id = $3",
            developer_id,
            execution_id,
            transition_id,
        )
        return None if row is None else read_transition(record(row))
