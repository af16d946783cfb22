"""A session's history: the `entries` table's reads and writes for chat, the history routes and adaptive
context's compression (activities/sessions.py), whose summarizer entries replace others in one transaction.

History order is (coalesce(at_seq, seq), seq): a summarizer entry sits where the first entry it replaces sat
(migration 0023)."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg

from contracts.messages import Message

_ENTRY_COLUMNS = "role, name, content, tool_calls, tool_call_id, token_count"
_ORDER = "ORDER BY coalesce(at_seq, seq), seq"
SUMMARIZER = "summarizer"  # the source of compression's entries, as Julep's Entry.source names it


def _message(row: asyncpg.Record) -> dict[str, Any]:
    """An entry as a chat message; what only Mint needs (its id, order key, source, token count and what it
    replaces) under keys starting with `_`, which the context leaves out."""
    message: dict[str, Any] = {"role": row["role"], "content": row["content"]}
    for key in ("name", "tool_calls", "tool_call_id"):
        if row[key] is not None:
            message[key] = row[key]
    message.update(
        _tokens=row["token_count"],
        _id=str(row["id"]),
        _order=row["order_key"],
        _source=row["source"],
        _replaces=[str(r) for r in row["replaces"] or []],
    )
    return message


class SessionHistory:
    def __init__(self, pool: asyncpg.Pool):
        self.pool = pool

    async def unsummarized(self, developer: str, session_id: str) -> tuple[str | None, list[dict[str, Any]]]:
        """The session's summary (the column older compressions wrote) and the messages not replaced by a
        summarizer entry, read in one snapshot (a compression landing in between must not lose the messages
        it replaces). Each message carries its token count as `_tokens` (and `_id`, `_order`, `_source`,
        `_replaces`)."""
        async with self.pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
            summary = await conn.fetchval(
                "SELECT summary FROM sessions WHERE developer_id = $1 AND id = $2", developer, session_id
            )
            rows = await conn.fetch(
                f"SELECT id, {_ENTRY_COLUMNS}, source, replaces, coalesce(at_seq, seq) AS order_key "
                f"FROM entries WHERE developer_id = $1 AND session_id = $2 AND NOT summarized {_ORDER}",
                developer,
                session_id,
            )
        return summary, [_message(r) for r in rows]

    async def append(self, developer: str, session_id: str, entries: list[tuple[Message, str, int]]) -> None:
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

    async def replace(
        self,
        developer: str,
        session_id: str,
        replaced: list[str],
        new: list[tuple[dict[str, Any], int, int]],
    ) -> bool:
        """Summarizer entries, each (message, token count, order key), standing for the entries `replaced`,
        which leave the context: all of it in one transaction, and only if none of them was replaced
        meanwhile (False then, and nothing written)."""
        ids = [uuid.UUID(i) for i in replaced]
        try:
            await self._replace(developer, session_id, ids, new)
        except _Stale:
            return False
        return True

    async def _replace(
        self,
        developer: str,
        session_id: str,
        ids: list[uuid.UUID],
        new: list[tuple[dict[str, Any], int, int]],
    ) -> None:
        async with self.pool.acquire() as conn, conn.transaction():
            marked = await conn.execute(
                "UPDATE entries SET summarized = true WHERE developer_id = $1 AND session_id = $2 "
                "AND id = ANY($3::uuid[]) AND NOT summarized",
                developer,
                session_id,
                ids,
            )
            if int(marked.split()[-1]) != len(set(ids)):
                raise _Stale
            await conn.executemany(
                f"INSERT INTO entries (id, session_id, developer_id, {_ENTRY_COLUMNS}, source, replaces, "
                "at_seq) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
                [
                    (uuid.uuid4(), session_id, developer, m["role"], m.get("name"), m.get("content"))
                    + (None, None, tokens, SUMMARIZER, ids, at)
                    for m, tokens, at in new
                ],
            )

    async def entries(self, developer: str, session_id: str) -> list[dict[str, Any]]:
        """Every entry of the session, replaced or not, in history order; a summarizer entry names the
        entries it `replaces`."""
        rows = await self.pool.fetch(
            f"SELECT id, {_ENTRY_COLUMNS}, source, replaces, created_at FROM entries "
            f"WHERE developer_id = $1 AND session_id = $2 {_ORDER}",
            developer,
            session_id,
        )
        return [
            {**dict(r), "id": str(r["id"]), "replaces": [str(i) for i in r["replaces"] or []]} for r in rows
        ]

    async def clear(self, developer: str, session_id: str) -> None:
        """Delete every entry of the session (its summary is the session row's, cleared by the caller)."""
        await self.pool.execute(
            "DELETE FROM entries WHERE developer_id = $1 AND session_id = $2", developer, session_id
        )


class _Stale(Exception):
    """The entries to replace were replaced meanwhile."""
