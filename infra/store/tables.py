"""Tenant-scoped data access: every function takes the caller's developer id and filters on it.

Routes never write SQL; they call these. A forgotten filter in a route therefore cannot leak another
tenant's rows: there is no unscoped read here, and ids from another tenant behave like missing ids.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import uuid
from dataclasses import dataclass
from typing import Any

import asyncpg

from contracts.failures import error_type_of
from contracts.transitions import TERMINAL_STATUSES, check_sequence


class Conflict(Exception):
    """A write collided with an existing row: a taken id, or a name that must be unique."""


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[str, ...]  # the columns callers may write
    parent: str | None = None  # the owning resource's id column (tools and tasks belong to agents)


AGENTS = Table(
    "agents",
    (
        "name",
        "canonical_name",
        "about",
        "model",
        "instructions",
        "default_settings",
        "default_system_template",
        "project",
        "metadata",
        "handoffs",
        "guardrails",
    ),
)
USERS = Table("users", ("name", "about", "project", "metadata"))
SESSIONS = Table(
    "sessions",
    (
        "agents",
        "users",
        "situation",
        "system_template",
        "token_budget",
        "context_overflow",
        "render_templates",
        "recall_options",
        "auto_run_tools",
        "forward_tool_calls",
        "summary",
        "settings",
        "metadata",
        "budget",
    ),
)
TOOLS = Table("tools", ("name", "type", "description", "spec"), parent="agent_id")
TASKS = Table("tasks", ("name", "version"), parent="agent_id")
EXECUTIONS = Table(
    "executions",
    (
        "task_id",
        "task_version",
        "status",
        "input",
        "metadata",
        "error",
        "idempotency_key",
        "budget",
        "restarted_from",
    ),
    parent="task_id",
)


@dataclass(frozen=True)
class Page:
    limit: int = 100
    offset: int = 0
    sort_by: str = "created_at"
    direction: str = "desc"
    metadata_filter: dict[str, Any] | None = None

    def order(self, alias: str = "") -> str:
        """The ORDER BY terms; `alias` qualifies the columns in a join (`e` for `e.created_at`)."""
        at = f"{alias}." if alias else ""
        column = "updated_at" if self.sort_by == "updated_at" else "created_at"
        direction = "ASC" if self.direction == "asc" else "DESC"
        return f"{at}{column} {direction}, {at}id {direction}"


def record(row: asyncpg.Record | None) -> dict[str, Any] | None:
    """A row as a plain dict with string ids."""
    if row is None:
        return None
    return {k: str(v) if isinstance(v, uuid.UUID) else v for k, v in row.items()}


def new_id() -> str:
    return str(uuid.uuid4())


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class Store:
    """All reads and writes of Mint's resources, scoped to one developer per call."""

    def __init__(self, pool: asyncpg.Pool):
        self.pool = pool

    async def ping(self) -> None:
        """One round trip to the database (the health check)."""
        await self.pool.fetchval("SELECT 1")

    # Generic resources ---------------------------------------------------------------------------------

    async def insert(
        self, table: Table, developer_id: str, values: dict[str, Any], id_: str | None = None
    ) -> dict[str, Any]:
        cols = [c for c in values if c in table.columns or c == table.parent]
        sql = (
            f"INSERT INTO {table.name} (id, developer_id, {', '.join(cols)}) "
            f"VALUES ($1, $2, {', '.join(f'${i + 3}' for i in range(len(cols)))}) RETURNING *"
        )
        try:
            row = await self.pool.fetchrow(sql, id_ or new_id(), developer_id, *(values[c] for c in cols))
        except asyncpg.UniqueViolationError:
            raise Conflict(
                f"id {id_} is already in use; choose another id" if id_ else "already exists"
            ) from None
        return record(row)  # type: ignore[return-value]

    async def get(self, table: Table, developer_id: str, id_: str) -> dict[str, Any] | None:
        row = await self.pool.fetchrow(
            f"SELECT * FROM {table.name} WHERE developer_id = $1 AND id = $2", developer_id, id_
        )
        return record(row)

    async def find(
        self, table: Table, developer_id: str, page: Page, parent_id: str | None = None
    ) -> list[dict[str, Any]]:
        where: list[str] = ["developer_id = $1"]
        args: list[Any] = [developer_id]
        if parent_id is not None and table.parent:
            args.append(parent_id)
            where.append(f"{table.parent} = ${len(args)}")
        if page.metadata_filter:
            args.append(page.metadata_filter)
            where.append(f"metadata @> ${len(args)}::jsonb")
        args += [page.limit, page.offset]
        sql = (
            f"SELECT * FROM {table.name} WHERE {' AND '.join(where)} ORDER BY {page.order()} "
            f"LIMIT ${len(args) - 1} OFFSET ${len(args)}"
        )
        return [record(r) for r in await self.pool.fetch(sql, *args)]  # type: ignore[misc]

    async def update(
        self, table: Table, developer_id: str, id_: str, values: dict[str, Any]
    ) -> dict[str, Any] | None:
        cols = [c for c in values if c in table.columns]
        if not cols:
            return await self.get(table, developer_id, id_)
        assignments = ", ".join(f"{c} = ${i + 3}" for i, c in enumerate(cols))
        sql = (
            f"UPDATE {table.name} SET {assignments}, updated_at = now() "
            f"WHERE developer_id = $1 AND id = $2 RETURNING *"
        )
        try:
            return record(await self.pool.fetchrow(sql, developer_id, id_, *(values[c] for c in cols)))
        except asyncpg.UniqueViolationError as exc:
            raise Conflict(
                f"this change conflicts with an existing {table.name[:-1]}: {exc.detail}"
            ) from None

    async def delete(self, table: Table, developer_id: str, id_: str) -> bool:
        result = await self.pool.execute(
            f"DELETE FROM {table.name} WHERE developer_id = $1 AND id = $2", developer_id, id_
        )
        return result != "DELETE 0"

    async def agent_tools(self, developer_id: str, agent_id: str) -> list[dict[str, Any]]:
        """An agent's tools (rows; `spec` is the task-language definition), oldest first."""
        return await self.find(TOOLS, developer_id, Page(limit=1000, direction="asc"), parent_id=agent_id)

    # Developers and keys -------------------------------------------------------------------------------

    async def create_developer(self, name: str, key: str | None = None) -> tuple[str, str]:
        """Create a developer with one API key; return (developer id, key). The key is shown only here."""
        developer_id = new_id()
        key = key or "mint_" + secrets.token_urlsafe(32)
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute("INSERT INTO developers (id, name) VALUES ($1, $2)", developer_id, name)
            await conn.execute(
                "INSERT INTO api_keys (id, developer_id, key_hash, prefix) VALUES ($1, $2, $3, $4)",
                new_id(),
                developer_id,
                hash_key(key),
                key[:9],
            )
        return developer_id, key

    async def add_key(self, developer_id: str) -> str:
        """A new API key for an existing developer (shown only here); the developer's other keys go on working."""
        key = "mint_" + secrets.token_urlsafe(32)
        await self.pool.execute(
            "INSERT INTO api_keys (id, developer_id, key_hash, prefix) VALUES ($1, $2, $3, $4)",
            new_id(),
            developer_id,
            hash_key(key),
            key[:9],
        )
        return key

    async def revoke_key(self, key: str) -> bool:
        """Revoke a key (given whole): it stops working at once. False if no live key matches."""
        result = await self.pool.execute(
            "UPDATE api_keys SET revoked_at = now() WHERE key_hash = $1 AND revoked_at IS NULL", hash_key(key)
        )
        return result != "UPDATE 0"

    async def ensure_developer_key(self, name: str, key: str) -> str:
        """The developer that owns `key`, creating it if the key is new (used by `mint up`)."""
        found = await self.developer_for_key(key)
        if found:
            return found
        developer_id, _ = await self.create_developer(name, key)
        return developer_id

    async def developer_for_key(self, key: str) -> str | None:
        row = await self.pool.fetchrow(
            "SELECT developer_id FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL", hash_key(key)
        )
        return str(row["developer_id"]) if row else None

    # Tasks ---------------------------------------------------------------------------------------------

    async def save_task(
        self, developer_id: str, agent_id: str, task_id: str | None, document: dict[str, Any], dialect: str
    ) -> dict[str, Any]:
        """Create a task, or add a new version to an existing one (its executions keep their version)."""
        async with self.pool.acquire() as conn, conn.transaction():
            existing = None
            if task_id:
                existing = await conn.fetchrow(
                    "SELECT * FROM tasks WHERE developer_id = $1 AND id = $2 FOR UPDATE",
                    developer_id,
                    task_id,
                )
            if existing is None:
                row = await conn.fetchrow(
                    "INSERT INTO tasks (id, developer_id, agent_id, name) VALUES ($1, $2, $3, $4) RETURNING *",
                    task_id or new_id(),
                    developer_id,
                    agent_id,
                    document["name"],
                )
            elif await _unchanged(conn, existing, agent_id, document, dialect):
                # Saving the same task again (`mint run` of a file that did not change) keeps its version.
                return {**record(existing), "document": document, "dialect": dialect}  # type: ignore[dict-item]
            else:
                row = await conn.fetchrow(
                    "UPDATE tasks SET version = version + 1, name = $3, agent_id = $4, updated_at = now() "
                    "WHERE developer_id = $1 AND id = $2 RETURNING *",
                    developer_id,
                    task_id,
                    document["name"],
                    agent_id,
                )
            await conn.execute(
                "INSERT INTO task_versions (developer_id, task_id, version, document, dialect) "
                "VALUES ($1, $2, $3, $4, $5)",
                developer_id,
                row["id"],
                row["version"],
                document,
                dialect,
            )
        return {**record(row), "document": document, "dialect": dialect}  # type: ignore[dict-item]

    async def delete_task(self, developer_id: str, task_id: str) -> bool:
        """Delete a task with its versions and past executions; Conflict while one of them is unfinished
        (its workflow would go on writing transitions for an execution that no longer exists)."""
        async with self.pool.acquire() as conn, conn.transaction():
            task = await conn.fetchrow(
                "SELECT id FROM tasks WHERE developer_id = $1 AND id = $2 FOR UPDATE", developer_id, task_id
            )
            if task is None:
                return False
            unfinished = await conn.fetchval(
                "SELECT count(*) FROM executions WHERE developer_id = $1 AND task_id = $2 "
                "AND status NOT IN ('succeeded', 'failed', 'cancelled')",
                developer_id,
                task_id,
            )
            if unfinished:
                raise Conflict(
                    f"task {task_id} has {unfinished} unfinished execution(s); cancel them or let them end first"
                )
            await conn.execute("DELETE FROM tasks WHERE developer_id = $1 AND id = $2", developer_id, task_id)
        return True

    async def get_task(
        self, developer_id: str, task_id: str, version: int | None = None
    ) -> dict[str, Any] | None:
        """A task with its document (the latest version unless `version` is given)."""
        row = await self.pool.fetchrow(
            "SELECT t.*, v.document, v.dialect FROM tasks t JOIN task_versions v "
            "ON v.developer_id = t.developer_id AND v.task_id = t.id "
            "AND v.version = COALESCE($3, t.version) WHERE t.developer_id = $1 AND t.id = $2",
            developer_id,
            task_id,
            version,
        )
        return record(row)

    async def list_tasks(self, developer_id: str, agent_id: str, page: Page) -> list[dict[str, Any]]:
        rows = await self.pool.fetch(
            "SELECT t.*, v.document, v.dialect FROM tasks t JOIN task_versions v "
            "ON v.developer_id = t.developer_id AND v.task_id = t.id "
            f"AND v.version = t.version WHERE t.developer_id = $1 AND t.agent_id = $2 ORDER BY t.{page.order()} "
            "LIMIT $3 OFFSET $4",
            developer_id,
            agent_id,
            page.limit,
            page.offset,
        )
        return [record(r) for r in rows]  # type: ignore[misc]

    # Executions and transitions ------------------------------------------------------------------------

    async def set_execution_status(
        self,
        developer_id: str,
        execution_id: str,
        status: str,
        only_from: tuple[str, ...],
        error: str | None = None,
    ) -> bool:
        """Move an execution to `status` if it is in one of `only_from` (used around workflow starts)."""
        result = await self.pool.execute(
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
        return await self.pool.fetchval(
            "SELECT count(*) FROM executions WHERE developer_id = $1 "
            "AND status IN ('queued', 'starting', 'running', 'awaiting_input')",
            developer_id,
        )

    async def list_executions(
        self, developer_id: str, page: Page, status: str | None = None
    ) -> list[dict[str, Any]]:
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
        return [record(r) for r in rows]  # type: ignore[misc]

    async def open_wait(self, developer_id: str, execution_id: str) -> int | None:
        """The seq of the oldest `wait` transition that no `resume` answered yet."""
        return await self.pool.fetchval(
            """
            SELECT w.seq FROM transitions w
            WHERE w.developer_id = $1 AND w.execution_id = $2 AND w.type = 'wait'
              AND NOT EXISTS (SELECT 1 FROM transitions r WHERE r.execution_id = w.execution_id
                              AND r.type = 'resume' AND (r.metadata->>'wait_seq')::int = w.seq)
            ORDER BY w.seq LIMIT 1
            """,
            developer_id,
            execution_id,
        )

    # The reconciler, across developers: it ends executions, it never reads their data -----------------

    async def claim_quiet_executions(self, quiet_seconds: float, limit: int) -> list[dict[str, Any]]:
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
            RETURNING id, developer_id, status
            """,
            quiet_seconds,
            limit,
        )
        return [record(r) for r in rows]  # type: ignore[misc]

    async def end_execution(
        self, developer_id: str, execution_id: str, kind: str, status: str, error: str | None
    ) -> bool:
        """Append the final transition of an execution whose workflow cannot (it is closed or never ran)."""
        async with self.pool.acquire() as conn, conn.transaction():
            row = await conn.fetchrow(
                "SELECT status, last_seq, last_transition_type FROM executions "
                "WHERE developer_id = $1 AND id = $2 FOR UPDATE",
                developer_id,
                execution_id,
            )
            if row is None or row["status"] in TERMINAL_STATUSES:
                return False
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
        return True

    async def note_cancel_reason(self, developer_id: str, execution_id: str, reason: str) -> None:
        """Keep the reason a client gave for cancelling (as the execution's error text)."""
        await self.pool.execute(
            "UPDATE executions SET error = $3 WHERE developer_id = $1 AND id = $2 AND error IS NULL",
            developer_id,
            execution_id,
            f"cancelled: {reason}",
        )

    async def execution_by_key(self, developer_id: str, task_id: str, key: str) -> dict[str, Any] | None:
        row = await self.pool.fetchrow(
            "SELECT * FROM executions WHERE developer_id = $1 AND task_id = $2 AND idempotency_key = $3",
            developer_id,
            task_id,
            key,
        )
        return record(row)

    async def list_transitions(
        self,
        developer_id: str,
        execution_id: str,
        page: Page,
        after_seq: int = 0,
        scope_id: str | None = None,
    ) -> list[dict[str, Any]]:
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
        return [record(r) for r in rows]  # type: ignore[misc]

    async def all_transitions(self, developer_id: str, execution_id: str) -> list[dict[str, Any]]:
        """Every transition of an execution, oldest first (what its trace is built from)."""
        rows = await self.pool.fetch(
            "SELECT type, output, current, metadata, created_at FROM transitions "
            "WHERE developer_id = $1 AND execution_id = $2 ORDER BY seq",
            developer_id,
            execution_id,
        )
        return [dict(r) for r in rows]

    async def transitions_after(
        self, developer_id: str, execution_id: str, after_seq: int, limit: int
    ) -> tuple[str | None, list[dict[str, Any]]]:
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
        found = [record(r) for r in rows if r["id"] is not None]
        for row in found:
            del row["execution_status"]  # type: ignore[union-attr]
        return rows[0]["execution_status"], found  # type: ignore[return-value]

    async def get_transition(
        self, developer_id: str, execution_id: str, transition_id: str
    ) -> dict[str, Any] | None:
        row = await self.pool.fetchrow(
            "SELECT * FROM transitions WHERE developer_id = $1 AND execution_id = $2 AND id = $3",
            developer_id,
            execution_id,
            transition_id,
        )
        return record(row)


async def _unchanged(
    conn: asyncpg.Connection, task: asyncpg.Record, agent_id: str, document: dict[str, Any], dialect: str
) -> bool:
    """Whether saving `document` under `agent_id` would repeat the task's latest version exactly."""
    if str(task["agent_id"]) != agent_id:
        return False
    latest = await conn.fetchrow(
        "SELECT document, dialect FROM task_versions WHERE developer_id = $1 AND task_id = $2 AND version = $3",
        task["developer_id"],
        task["id"],
        task["version"],
    )
    # Compared as canonical JSON text, where `true` and `1` differ (as Python's == would not say).
    return (
        latest is not None
        and latest["dialect"] == dialect
        and _canonical(latest["document"]) == _canonical(document)
    )


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
