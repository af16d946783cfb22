"""Tenant-scoped data access: every function takes the caller's developer id and filters on it.

Routes never write SQL; they call these. A forgotten filter in a route therefore cannot leak another
tenant's rows: there is no unscoped read here, and ids from another tenant behave like missing ids.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

import asyncpg

from contracts.records.pages import Page
from contracts.records.tools import Tool
from infra.store.developers import Developers
from infra.store.executions import Executions
from infra.store.resource_records import agent_of, session_of, tool_of, user_of
from infra.store.rows import Conflict, Row, new_id, record
from infra.store.tasks import Tasks

R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


@dataclass(frozen=True)
class Table(Generic[R_co]):
    """A resource's table: the columns callers may write, and how a row of it reads as its record."""

    name: str
    columns: tuple[str, ...]
    read: Callable[[Row], R_co]
    parent: str | None = None  # the owning resource's id column (tools belong to agents)


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
    agent_of,
)
USERS = Table("users", ("name", "about", "project", "metadata"), user_of)
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
    session_of,
)
TOOLS = Table("tools", ("name", "type", "description", "spec"), tool_of, parent="agent_id")


class Store(Developers, Tasks, Executions):
    """All reads and writes of Mint's resources, scoped to one developer per call: the generic ones here,
    developers and keys, tasks, and executions in the modules of their own."""

    async def ping(self) -> None:
        """One round trip to the database (the health check)."""
        await self.pool.fetchval("SELECT 1")

    # Generic resources ---------------------------------------------------------------------------------

    async def insert(
        self, table: Table[R], developer_id: str, values: Mapping[str, object], id_: str | None = None
    ) -> R:
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
        return table.read(record(row))

    async def get(self, table: Table[R], developer_id: str, id_: str) -> R | None:
        row = await self.pool.fetchrow(
            f"SELECT * FROM {table.name} WHERE developer_id = $1 AND id = $2", developer_id, id_
        )
        return None if row is None else table.read(record(row))

    async def find(
        self, table: Table[R], developer_id: str, page: Page, parent_id: str | None = None
    ) -> list[R]:
        where: list[str] = ["developer_id = $1"]
        args: list[object] = [developer_id]
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
        return [table.read(record(r)) for r in await self.pool.fetch(sql, *args)]

    async def update(
        self, table: Table[R], developer_id: str, id_: str, values: Mapping[str, object]
    ) -> R | None:
        cols = [c for c in values if c in table.columns]
        if not cols:
            return await self.get(table, developer_id, id_)
        assignments = ", ".join(f"{c} = ${i + 3}" for i, c in enumerate(cols))
        sql = (
            f"UPDATE {table.name} SET {assignments}, updated_at = now() "
            f"WHERE developer_id = $1 AND id = $2 RETURNING *"
        )
        try:
            row = await self.pool.fetchrow(sql, developer_id, id_, *(values[c] for c in cols))
        except asyncpg.UniqueViolationError as exc:
            raise Conflict(
                f"this change conflicts with an existing {table.name[:-1]}: {exc.detail}"
            ) from None
        return None if row is None else table.read(record(row))

    async def delete(self, table: Table[R], developer_id: str, id_: str) -> bool:
        result: str = await self.pool.execute(
            f"DELETE FROM {table.name} WHERE developer_id = $1 AND id = $2", developer_id, id_
        )
        return result != "DELETE 0"

    async def agent_tools(self, developer_id: str, agent_id: str) -> list[Tool]:
        """An agent's tools, oldest first."""
        return await self.find(TOOLS, developer_id, Page(limit=1000, direction="asc"), parent_id=agent_id)
