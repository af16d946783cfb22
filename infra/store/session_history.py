"""A session's history: the `entries` table's reads and writes for chat, the history routes and adaptive
context's compression (activities/sessions.py), whose summarizer entries replace others in one transaction.

History order is (coalesce(at_seq, seq), seq): a summarizer entry sits where the first entry it replaces sat
(migration 0023)."""

from __future__ import annotations

import contextlib
import uuid
from typing import TypeGuard

import asyncpg

from contracts.json import JsonValue
from contracts.messages import ContentPart, Message, ToolCall
from contracts.records.sessions import HistoryEntry
from infra.store.history_cache import HistoryCache

_ENTRY_COLUMNS = "role, name, content, tool_calls, tool_call_id, token_count"
# What an entry is read with: its columns, what only Mint reads (its source, what it replaces, its time) and
# its order key.
_READ = f"id, {_ENTRY_COLUMNS}, source, replaces, created_at, coalesce(at_seq, seq) AS order_key"
_ORDER = "ORDER BY coalesce(at_seq, seq), seq"
# A session's summary and the seqs of its live entries (those not replaced), beside each live entry past
# seq $3 (one row with no entry if there is none): infra/store/history_cache.py.
_LIVE = "FROM entries WHERE developer_id = s.developer_id AND session_id = s.id AND NOT summarized"
_UNSUMMARIZED = f"""
SELECT s.summary, ARRAY(SELECT seq {_LIVE}) AS live, e.* FROM sessions s
LEFT JOIN LATERAL (SELECT {_READ}, seq {_LIVE} AND seq > $3) e ON true
WHERE s.developer_id = $1 AND s.id = $2
"""
# Entries per INSERT (Postgres takes at most 32,767 parameters in a statement).
APPEND_ROWS = 1000
SUMMARIZER = "summarizer"  # the source of compression's entries, as Julep's Entry.source names it


def _entry(row: asyncpg.Record) -> HistoryEntry:
    """An entry; its message holds only the keys that are set. Read from the row as asyncpg decoded it: the
    columns' types are the table's, and a chat reads every entry of its session, so only the JSON columns are
    checked (going through record() and a typed reader per column was most of a chat's CPU at 200 entries)."""
    content, tool_calls = row["content"], row["tool_calls"]
    if not (content is None or isinstance(content, str) or _parts(content)):
        raise TypeError(f"stored content is {type(content).__name__}, not a message's content")
    message = Message(role=row["role"], content=content)
    if (name := row["name"]) is not None:
        message["name"] = name
    if tool_calls is not None:
        if not _calls(tool_calls):
            raise TypeError("stored tool_calls are not a message's tool calls")
        message["tool_calls"] = tool_calls
    if (tool_call_id := row["tool_call_id"]) is not None:
        message["tool_call_id"] = tool_call_id
    return HistoryEntry(
        id=str(row["id"]),
        message=message,
        token_count=row["token_count"],
        source=row["source"],
        replaces=[str(r) for r in row["replaces"] or ()],
        order=row["order_key"],
        created_at=row["created_at"],
    )


def _parts(value: JsonValue) -> TypeGuard[list[ContentPart]]:
    """Content parts, as chats write them (each a JSON object naming its type)."""
    return isinstance(value, list) and all(
        isinstance(p, dict) and isinstance(p.get("type"), str) for p in value
    )


def _calls(value: JsonValue) -> TypeGuard[list[ToolCall]]:
    """Tool calls, as models answer them (each a JSON object naming its function)."""
    return isinstance(value, list) and all(
        isinstance(c, dict) and isinstance(c.get("id"), str) and isinstance(c.get("function"), dict)
        for c in value
    )


class SessionHistory:
    def __init__(self, pool: asyncpg.Pool, cache: HistoryCache | None = None):
        self.pool = pool
        self.cache = cache or HistoryCache()

    async def unsummarized(self, developer: str, session_id: str) -> tuple[str | None, list[HistoryEntry]]:
        """The session's summary (the column older compressions wrote) and the entries not replaced by a
        summarizer entry, in history order. One statement, so one snapshot (a compression landing meanwhile
        must not lose the entries it replaces) in one round trip, returning in full only the entries this
        process has not read before (a chat waits for this before its model call)."""
        for after in (self.cache.last_seq(developer, session_id), 0):
            rows = await self.pool.fetch(_UNSUMMARIZED, developer, session_id, after)
            if not rows:  # no such session (of this developer's)
                return None, []
            read = [(r["seq"], _entry(r)) for r in rows if r["id"] is not None]
            entries = self.cache.merged(developer, session_id, rows[0]["live"], read)
            if entries is not None:
                return rows[0]["summary"], entries
        raise AssertionError("a whole history read in one snapshot missed a live entry")

    async def append(self, developer: str, session_id: str, entries: list[tuple[Message, str, int]]) -> None:
        """Add messages to the history, each given as (message, source, token count), in that order, all or
        none. A chat's answer waits for this: one INSERT for up to APPEND_ROWS entries (executemany is a
        transaction around a statement per row)."""
        rows = [
            (uuid.uuid4(), session_id, developer, m["role"], m.get("name"), m.get("content"))
            + (m.get("tool_calls"), m.get("tool_call_id"), tokens, source)
            for m, source, tokens in entries
        ]
        if not rows:
            return
        batches = [rows[i : i + APPEND_ROWS] for i in range(0, len(rows), APPEND_ROWS)]
        async with self.pool.acquire() as conn:
            async with conn.transaction() if len(batches) > 1 else contextlib.nullcontext():
                for batch in batches:
                    await conn.execute(
                        _insert_entries(len(batch)), *(value for row in batch for value in row)
                    )

    async def replace(
        self,
        developer: str,
        session_id: str,
        replaced: list[str],
        new: list[tuple[Message, int, int]],
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
        new: list[tuple[Message, int, int]],
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

    async def entries(self, developer: str, session_id: str) -> list[HistoryEntry]:
        """Every entry of the session, replaced or not, in history order; a summarizer entry names the
        entries it `replaces`."""
        rows = await self.pool.fetch(
            f"SELECT {_READ} FROM entries WHERE developer_id = $1 AND session_id = $2 {_ORDER}",
            developer,
            session_id,
        )
        return [_entry(r) for r in rows]

    async def clear(self, developer: str, session_id: str) -> None:
        """Delete every entry of the session (its summary is the session row's, cleared by the caller)."""
        await self.pool.execute(
            "DELETE FROM entries WHERE developer_id = $1 AND session_id = $2", developer, session_id
        )


def _insert_entries(count: int) -> str:
    """The INSERT of `count` entries, their ten values each in one VALUES row (seqs follow the rows' order)."""
    width = 10
    rows = (", ".join(f"${n * width + k}" for k in range(1, width + 1)) for n in range(count))
    return f"INSERT INTO entries (id, session_id, developer_id, {_ENTRY_COLUMNS}, source) VALUES ({'), ('.join(rows)})"


class _Stale(Exception):
    """The entries to replace were replaced meanwhile."""
