"""Files: bytes a developer uploads (Julep v1's /files), kept in Postgres with their size and sha256 (hex).

Lists read the files' descriptions, never their bytes; `content` reads one file's, so that a list of large
files is answered one file after another rather than all held at once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

import asyncpg

from infra.store.rows import Page, new_id, record, record_or_none

COLUMNS = "id, name, description, mime_type, project, size, hash, created_at, updated_at"


class FileStore:
    def __init__(self, pool: asyncpg.Pool):
        self.pool = pool

    async def create(
        self, developer_id: str, fields: Mapping[str, object], content: bytes
    ) -> dict[str, object]:
        """A new file: `fields` are its name, description, mime_type and project (a canonical name)."""
        row = await self.pool.fetchrow(
            "INSERT INTO files (id, developer_id, name, description, mime_type, project, size, hash, content) "
            f"VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING {COLUMNS}",
            new_id(),
            developer_id,
            fields["name"],
            fields.get("description") or "",
            fields.get("mime_type"),
            fields["project"],
            len(content),
            hashlib.sha256(content).hexdigest(),
            content,
        )
        return record(row)

    async def find(self, developer_id: str, page: Page) -> list[dict[str, object]]:
        rows = await self.pool.fetch(
            f"SELECT {COLUMNS} FROM files WHERE developer_id = $1 ORDER BY {page.order()} LIMIT $2 OFFSET $3",
            developer_id,
            page.limit,
            page.offset,
        )
        return [record(r) for r in rows]

    async def get(
        self, developer_id: str, file_id: str, with_content: bool = False
    ) -> dict[str, object] | None:
        """The file's description, and its bytes as `content` if asked for; None if there is no such file."""
        columns = f"{COLUMNS}, content" if with_content else COLUMNS
        row = await self.pool.fetchrow(
            f"SELECT {columns} FROM files WHERE developer_id = $1 AND id = $2", developer_id, file_id
        )
        return record_or_none(row)

    async def content(self, developer_id: str, file_id: str) -> bytes | None:
        """The file's bytes; None if the developer has no such file (any more)."""
        found: bytes | None = await self.pool.fetchval(
            "SELECT content FROM files WHERE developer_id = $1 AND id = $2", developer_id, file_id
        )
        return found

    async def delete(self, developer_id: str, file_id: str) -> bool:
        result: str = await self.pool.execute(
            "DELETE FROM files WHERE developer_id = $1 AND id = $2", developer_id, file_id
        )
        return result != "DELETE 0"
