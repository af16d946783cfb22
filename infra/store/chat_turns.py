"""A session's turn to chat: one chat at a time per session, held as a lease row, never as a connection.

A chat can last minutes (model calls, tools that run on the worker). Holding an advisory lock for that long
pins a pooled connection, and 20 slow chats pinned the whole pool while each waited for a second connection:
a deadlock for every tenant. So the turn is a row in `chat_turns` (migration 0013) with an expiry: taking it,
renewing it and giving it back are each one short statement, and a turn whose API process died expires by
itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator

import asyncpg

# How long a turn lasts without renewal, and how often a live chat renews it: a crashed chat blocks its
# session for at most LEASE_SECONDS.
LEASE_SECONDS = 30.0
RENEW_EVERY_SECONDS = 10.0
# Waiting for a busy session: first poll soon (most chats are short), then back off.
FIRST_POLL_SECONDS = 0.05
MAX_POLL_SECONDS = 0.5

_TAKE = """
INSERT INTO chat_turns (developer_id, session_id, holder, expires_at)
VALUES ($1, $2, $3, now() + make_interval(secs => $4))
ON CONFLICT (developer_id, session_id) DO UPDATE
    SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
    WHERE chat_turns.expires_at <= now()
RETURNING holder
"""
_RENEW = (
    "UPDATE chat_turns SET expires_at = now() + make_interval(secs => $4) "
    "WHERE developer_id = $1 AND session_id = $2 AND holder = $3"
)
_GIVE_BACK = "DELETE FROM chat_turns WHERE developer_id = $1 AND session_id = $2 AND holder = $3"


class SessionBusy(Exception):
    """Another chat held the session's turn for the whole wait."""


class ChatTurns:
    def __init__(self, pool: asyncpg.Pool, lease_seconds: float = LEASE_SECONDS):
        self.pool = pool
        self.lease_seconds = lease_seconds

    @contextlib.asynccontextmanager
    async def turn(self, developer: str, session_id: str, wait_seconds: float) -> AsyncIterator[None]:
        """Hold the session's turn for the block; SessionBusy if it stays taken for `wait_seconds`."""
        holder = uuid.uuid4()
        await self._take(developer, session_id, holder, wait_seconds)
        renewing = asyncio.create_task(self._renew_forever(developer, session_id, holder))
        try:
            yield
        finally:
            renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewing
            # If this fails (the database is down), the turn simply expires.
            with contextlib.suppress(Exception):
                await self.pool.execute(_GIVE_BACK, developer, session_id, holder)

    async def _take(self, developer: str, session_id: str, holder: uuid.UUID, wait_seconds: float) -> None:
        loop = asyncio.get_running_loop()
        deadline, pause = loop.time() + wait_seconds, FIRST_POLL_SECONDS
        while await self.pool.fetchval(_TAKE, developer, session_id, holder, self.lease_seconds) is None:
            if loop.time() + pause > deadline:
                raise SessionBusy(session_id)
            await asyncio.sleep(pause)
            pause = min(pause * 2, MAX_POLL_SECONDS)

    async def _renew_forever(self, developer: str, session_id: str, holder: uuid.UUID) -> None:
        while True:
            await asyncio.sleep(min(RENEW_EVERY_SECONDS, self.lease_seconds / 3))
            # A failed renewal is not fatal to the chat: the next one may succeed before the lease runs out.
            with contextlib.suppress(Exception):
                await self.pool.execute(_RENEW, developer, session_id, holder, self.lease_seconds)
