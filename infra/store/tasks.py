"""Tasks and their versions: saving a task adds a version unless nothing changed; its executions keep
the version they started with."""

from __future__ import annotations

import json
from collections.abc import Mapping

import asyncpg

from contracts.json import JsonObject
from contracts.records.pages import Page
from contracts.records.tasks import TaskVersion
from infra.store.execution_records import read_task_version
from infra.store.rows import Conflict, PoolUser, new_id, record


class Tasks(PoolUser):
    async def save_task(
        self,
        developer_id: str,
        agent_id: str,
        task_id: str | None,
        document: JsonObject,
        dialect: str,
    ) -> TaskVersion:
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
                return read_task_version({**record(existing), "document": document, "dialect": dialect})
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
        return read_task_version({**record(row), "document": document, "dialect": dialect})

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
    ) -> TaskVersion | None:
        """A task with its document (the latest version unless `version` is given)."""
        row = await self.pool.fetchrow(
            "SELECT t.*, v.document, v.dialect FROM tasks t JOIN task_versions v "
            "ON v.developer_id = t.developer_id AND v.task_id = t.id "
            "AND v.version = COALESCE($3, t.version) WHERE t.developer_id = $1 AND t.id = $2",
            developer_id,
            task_id,
            version,
        )
        return None if row is None else read_task_version(record(row), version)

    async def list_tasks(self, developer_id: str, agent_id: str, page: Page) -> list[TaskVersion]:
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
        return [read_task_version(record(r)) for r in rows]


async def _unchanged(
    conn: asyncpg.Connection,
    task: asyncpg.Record,
    agent_id: str,
    document: Mapping[str, object],
    dialect: str,
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


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
