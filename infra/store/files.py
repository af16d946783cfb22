"""Files: bytes a developer uploads (Julep v1's /files), kept in Postgres with their size and sha256 (hex).

Lists read the files' descriptions, never their bytes; `content` reads one file's, so that a list of large
files is answered one file after another rather than all held at once.
"""

from __future__ import annotations

import hashlib

import asyncpg

from contracts.records.files import FileFields, StoredFile
from contracts.records.pages import Page
from infra.store import rows

COLUMNS = "id, name, description, mime_type, project, size, hash, created_at, updated_at"


class FileStore:
    def __init__(self, pool: asyncpg.Pool):
        self.pool = pool

    async def create(self, developer_id: str, fields: FileFields, content: bytes) -> StoredFile:
        """A new file, in project `fields.project` (a canonical name)."""
        row = await self.pool.fetchrow(
            "INSERT INTO files (id, developer_id, name, description, mime_type, project, size, hash, content) "
            f"VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING {COLUMNS}",
            rows.new_id(),
            developer_id,
            fields.name,
            fields.description,
            fields.mime_type,
            fields.project,
            len(content),
            hashlib.sha256(content).hexdigest(),
            content,
        )
        return file_of(row)

    async def find(self, developer_id: str, page: Page) -> list[StoredFile]:
        found = await self.pool.fetch(
            f"SELECT {COLUMNS} FROM files WHERE developer_id = $1 ORDER BY {page.order()} LIMIT $2 OFFSET $3",
            developer_id,
            page.limit,
            page.offset,
        )
        return [file_of(r) for r in found]

    async def get(self, developer_id: str, file_id: str) -> tuple[StoredFile, bytes] | None:
        """The file's description and its bytes; None if there is no such file."""
        row = await self.pool.fetchrow(
            f"SELECT {COLUMNS}, content FROM files WHERE developer_id = $1 AND id = $2", developer_id, file_id
        )
        if row is None:
            return None
        content = row["content"]
        if not isinstance(content, bytes):
            raise TypeError(f"stored content is {type(content).__name__}, not bytes")
        return file_of(row), content

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


def file_of(row: asyncpg.Record) -> StoredFile:
    fields = rows.record(row)
    return StoredFile(
        id=rows.text(fields, "id"),
        name=rows.text(fields, "name"),
        description=rows.optional_text(fields, "description") or "",
        mime_type=rows.optional_text(fields, "mime_type"),
        project=rows.optional_text(fields, "project"),
        size=rows.integer(fields, "size"),
        hash=rows.text(fields, "hash"),
        created_at=rows.moment(fields, "created_at"),
        updated_at=rows.moment(fields, "updated_at"),
    )
