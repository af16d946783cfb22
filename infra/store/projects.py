"""Projects: a developer's named groups of agents, users and files (Julep v1's), each known by a canonical
name unique per developer whatever its case. Every developer has `default` (migration 0021 makes it)."""

from __future__ import annotations

import asyncpg

from contracts.json import JsonObject
from contracts.records.pages import Page
from contracts.records.projects import Project
from infra.store import rows
from infra.store.rows import Conflict

DEFAULT = "default"
COLUMNS = "id, canonical_name, name, metadata, created_at, updated_at"


class ProjectStore:
    def __init__(self, pool: asyncpg.Pool):
        self.pool = pool

    async def create(
        self, developer_id: str, canonical_name: str, name: str, metadata: JsonObject
    ) -> Project:
        """A new project; Conflict if the developer has one of that canonical name (in any case)."""
        try:
            row = await self.pool.fetchrow(
                "INSERT INTO projects (id, developer_id, canonical_name, name, metadata) "
                f"VALUES ($1, $2, $3, $4, $5) RETURNING {COLUMNS}",
                rows.new_id(),
                developer_id,
                canonical_name,
                name,
                metadata,
            )
        except asyncpg.UniqueViolationError:
            raise Conflict(
                f"a project with canonical name {canonical_name!r} already exists "
                "(canonical names are unique per developer, whatever their case): choose another"
            ) from None
        return project_of(row)

    async def find(self, developer_id: str, page: Page) -> list[Project]:
        found = await self.pool.fetch(
            f"SELECT {COLUMNS} FROM projects WHERE developer_id = $1 "
            f"AND ($2::jsonb IS NULL OR metadata @> $2::jsonb) ORDER BY {page.order()} LIMIT $3 OFFSET $4",
            developer_id,
            page.metadata_filter,
            page.limit,
            page.offset,
        )
        return [project_of(r) for r in found]

    async def canonical(self, developer_id: str, name: str) -> str | None:
        """The canonical name, as stored, of the developer's project called `name` in any case; None if none."""
        name_found: str | None = await self.pool.fetchval(
            "SELECT canonical_name FROM projects WHERE developer_id = $1 AND lower(canonical_name) = lower($2)",
            developer_id,
            name,
        )
        return name_found


def project_of(row: asyncpg.Record) -> Project:
    fields = rows.record(row)
    return Project(
        id=rows.text(fields, "id"),
        name=rows.text(fields, "name"),
        canonical_name=rows.text(fields, "canonical_name"),
        metadata=rows.json_object(fields, "metadata"),
        created_at=rows.moment(fields, "created_at"),
        updated_at=rows.moment(fields, "updated_at"),
    )
