"""A session's history: the `entries` table's reads and writes for chat and the history routes (the
compression activity folds entries into the summary itself, activities/sessions.py)."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg

_ENTRY_COLUMNS = "role, name, content, tool_calls, tool_call_id, token_count"


class SessionHistory:
    def __init__(self, pool: asyncpg.Pool):
        self.pool = pool

    async def unsummarized(self, developer: str, session_id: str) -> tuple[str | None, list[dict[str, Any]]]:
        """The session's summary and the messages not yet folded into it, read in one snapshot (a
        compression landing in between must not lose the messages it folds). Each message carries its
        token count as `_tokens`."""
        async with self.pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
            summary = await conn.fetchval(
                "SELECT summary FROM sessions WHERE developer_id = $1 AND id = $2", developer, session_id
            )
            rows = await conn.fetch(
                f"SELECT {_ENTRY_COLUMNS} FROM entries "
                "WHERE developer_id = $1 AND session_id = $2 AND NOT summarized ORDER BY seq",
                developer,
                session_id,
            )
        messages = []
        for r in rows:
            message: dict[str, Any] = {
                "role": r["role"],
                "content": r["content"],
                "_tokens": r["token_count"],
            }
            for key in ("name", "tool_calls", "tool_call_id"):
                if r[key] is not None:
                    message[key] = r[key]
            messages.append(message)
        return summary, messages

    async def append(
        self, developer: str, session_id: str, entries: list[tuple[dict[str, Any], str, int]]
    ) -> None:
        """Add messages to the history, each given as (message, source, token count)."""
        await self.pool.executemany(
            f"INSERT INTO entries (id, session_id, developer_id, {_ENTRY_COLUMNS}, source) "
            "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            [
                (
                    uuid.uuid4(),
                    session_id,
                    developer,
                    m["role"],
                    m.get("name"),
                    m.get("content"),
                    m.get("tool_calls"),
                    m.get("tool_call_id"),
                    tokens,
                    source,
                )
                for m, source, tokens in entries
            ],
        )

    async def entries(self, developer: str, session_id: str) -> list[dict[str, Any]]:
        """Every entry of the session, folded or not, oldest first."""
        rows = await self.pool.fetch(
            f"SELECT id, {_ENTRY_COLUMNS}, source, created_at FROM entries "
            "WHERE developer_id = $1 AND session_id = $2 ORDER BY seq",
            developer,
            session_id,
        )
        return [{**dict(r), "id": str(r["id"])} for r in rows]

    async def clear(self, developer: str, session_id: str) -> None:
        """Delete every entry of the session (its summary is the session row's, cleared by the caller)."""
        await self.pool.execute(
            "DELETE FROM entries WHERE developer_id = $1 AND session_id = $2", developer, session_id
        )
