"""A developer's tasks as a catalog (the MCP server's tools, services/mcp_tools.py): each task's id and name,
with the description and input schema of its latest version, read out of the document in SQL so that a
listing never carries whole task documents (each up to MINT_MAX_TASK_BYTES)."""

from __future__ import annotations

from dataclasses import dataclass

from contracts.json import JsonValue
from infra.store.rows import PoolUser, Row, json_value, record, text

# Oldest first (then by id): the order in which tool names are given out, stable as tasks are added.
_ORDER = "ORDER BY t.created_at, t.id"


@dataclass(frozen=True)
class CatalogEntry:
    """A task as a catalog lists it; `description` and `input_schema` as its latest version has them (None
    for the names alone)."""

    id: str
    name: str
    description: JsonValue = None
    input_schema: JsonValue = None


class TaskCatalog(PoolUser):
    async def entries(self, developer_id: str) -> list[CatalogEntry]:
        """Every task of the developer, with its description and input schema."""
        rows = await self.pool.fetch(
            "SELECT t.id, t.name, v.document -> 'description' AS description, "
            "v.document -> 'input_schema' AS input_schema FROM tasks t JOIN task_versions v "
            "ON v.developer_id = t.developer_id AND v.task_id = t.id AND v.version = t.version "
            f"WHERE t.developer_id = $1 {_ORDER}",
            developer_id,
        )
        return [_entry(record(r)) for r in rows]

    async def names(self, developer_id: str) -> list[CatalogEntry]:
        """Every task of the developer, its id and name only (what resolving a tool's name needs)."""
        rows = await self.pool.fetch(
            f"SELECT t.id, t.name FROM tasks t WHERE t.developer_id = $1 {_ORDER}", developer_id
        )
        return [_entry(record(r)) for r in rows]


def _entry(row: Row) -> CatalogEntry:
    return CatalogEntry(
        text(row, "id"), text(row, "name"), json_value(row, "description"), json_value(row, "input_schema")
    )
