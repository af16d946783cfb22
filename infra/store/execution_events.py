"""Changes to executions, pushed by Postgres to the streams that watch them.

Migration 0015 notifies the channel `mint_executions` with an execution's id in every transaction that
changes what a stream shows of it (its status, its transitions, its error), so a notification arrives when
those rows are committed. It carries no data: a stream it wakes re-reads the rows as its own developer.

Each API process listens on one connection of its own (LISTEN keeps a connection for the process's life, so
never a pooled one) and wakes the streams watching that execution: a notification for an execution nobody
watches costs a dict lookup, and many notifications before a stream re-reads cost it one re-read. When that
connection is lost it reconnects with backoff; meanwhile streams re-read every `poll_seconds`, and once it
listens again every stream re-reads, so no change made while nobody listened is missed. A hub that was never
started (an app built without the composition root) simply polls.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Iterator
from typing import Any

import asyncpg

CHANNEL = "mint_executions"
# The listening connection's name in pg_stat_activity.
APPLICATION_NAME = "mint-execution-events"
# How often the connection proves that it still receives (a notification it sends itself must come back):
# a half-open TCP connection, or a proxy that does not pass notifications on, fails this, not silently.
CHECK_SECONDS = 15.0
PROBE_TIMEOUT = 5.0
CONNECT_TIMEOUT = 10.0
FIRST_RETRY_SECONDS = 0.1
MAX_RETRY_SECONDS = 5.0

log = logging.getLogger(__name__)


class Watch:
    """One stream's watch on one execution."""

    def __init__(self, hub: ExecutionEvents) -> None:
        self._hub = hub
        self._changed = asyncio.Event()

    def wake(self) -> None:
        """The execution may have changed (or nobody knows): the stream should re-read it."""
        self._changed.set()

    async def wait_until(self, deadline: float) -> bool:
        """True once the execution may have changed since the last call returned True (a notification, or,
        while notifications are not arriving, every `poll_seconds`): re-read it. False at `deadline` (event
        loop time) with nothing to re-read."""
        loop = asyncio.get_running_loop()
        polling = not self._hub.listening
        timeout = deadline - loop.time()
        if polling:
            timeout = min(timeout, self._hub.poll_seconds)
        if timeout > 0 and not self._changed.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._changed.wait()
        if self._changed.is_set():
            self._changed.clear()  # wakes after this are for changes the caller has not read yet
            return True
        return polling and loop.time() < deadline


class ExecutionEvents:
    """The hub: one listening connection, and the watches of this process's streams by execution id."""

    def __init__(self, database_url: str | None = None, poll_seconds: float = 1.0) -> None:
        self.poll_seconds = poll_seconds
        self.listening = False
        self.listener_pid: int | None = None  # the listening connection's server process, while it listens
        self._url = database_url
        self._watches: dict[str, set[Watch]] = {}
        self._probes: dict[str, asyncio.Event] = {}
        self._task: asyncio.Task[None] | None = None

    @contextlib.contextmanager
    def watch(self, execution_id: str) -> Iterator[Watch]:
        """A watch on `execution_id` for the block: enter it before the first read, so no change is missed."""
        watch = Watch(self)
        watches = self._watches.setdefault(execution_id, set())
        watches.add(watch)
        try:
            yield watch
        finally:
            watches.discard(watch)
            if not watches and self._watches.get(execution_id) is watches:
                del self._watches[execution_id]

    async def __aenter__(self) -> ExecutionEvents:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        """Listen, and keep listening until stop(); returns once the first attempt listens or fails."""
        if self._url is None or self._task is not None:
            return
        attempted = asyncio.Event()
        self._task = asyncio.create_task(self._run(attempted))
        await attempted.wait()

    async def stop(self) -> None:
        """Stop listening and close the connection; streams still open go back to polling."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def _wake_all(self) -> None:
        for watches in self._watches.values():
            for watch in watches:
                watch.wake()

    def _notified(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        watches = self._watches.get(payload)
        if watches is not None:
            for watch in watches:
                watch.wake()
        elif (probe := self._probes.get(payload)) is not None:
            probe.set()

    async def _run(self, attempted: asyncio.Event) -> None:
        pause, warned = FIRST_RETRY_SECONDS, False
        while True:
            try:
                await self._listen(attempted)
            except Exception as exc:  # whatever ended the connection (or kept it from opening): reconnect
                if self.listening or not warned:  # once per outage, not once per attempt
                    log.warning(
                        "execution streams are not notified (%s: %s); they re-read every %g s until they are",
                        type(exc).__name__,
                        exc,
                        self.poll_seconds,
                    )
                warned = True
            finally:
                attempted.set()
                if self.listening:
                    self.listening, self.listener_pid = False, None
                    pause = FIRST_RETRY_SECONDS
                self._wake_all()  # each stream re-reads, then polls until the connection is back
            await asyncio.sleep(pause)
            pause = min(pause * 2, MAX_RETRY_SECONDS)

    async def _listen(self, attempted: asyncio.Event) -> None:
        """Listen until the connection fails (this raises then), checking it every CHECK_SECONDS."""
        conn = await asyncpg.connect(
            self._url, timeout=CONNECT_TIMEOUT, server_settings={"application_name": APPLICATION_NAME}
        )
        try:
            lost = asyncio.Event()
            conn.add_termination_listener(lambda _conn: lost.set())
            await conn.add_listener(CHANNEL, self._notified)
            await self._probe(conn)
            self.listening, self.listener_pid = True, conn.get_server_pid()
            attempted.set()
            self._wake_all()  # a change committed while nobody listened
            log.info("execution streams are notified (listening on %s)", CHANNEL)
            while not lost.is_set():
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(CHECK_SECONDS):
                        await lost.wait()
                if not lost.is_set():
                    await self._probe(conn)
            raise ConnectionError("the listening connection closed")
        finally:
            await _close(conn)

    async def _probe(self, conn: asyncpg.Connection) -> None:
        """A notification this connection sends must reach it: proof that it is alive and listening."""
        token = f"probe:{uuid.uuid4()}"
        arrived = self._probes[token] = asyncio.Event()
        try:
            async with asyncio.timeout(PROBE_TIMEOUT):
                await conn.execute("SELECT pg_notify($1, $2)", CHANNEL, token)
                await arrived.wait()
        except TimeoutError:
            raise ConnectionError(f"a notification did not come back within {PROBE_TIMEOUT:g} s") from None
        finally:
            del self._probes[token]


async def _close(conn: asyncpg.Connection) -> None:
    try:
        await conn.close(timeout=2)
    except Exception:  # closed already, or the server is gone: drop the socket
        conn.terminate()
