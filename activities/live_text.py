"""A streamed prompt step's text, published as it grows (infra/store/step_streams.py) for the execution's
transition stream to send as deltas.

The model's pieces are gathered here and written at most every INTERVAL seconds (the first at once), each
write holding all the text so far, so a model that sends a token a millisecond costs the database twenty
writes a second, not a thousand, and a slow write never slows the model's stream: the writes run beside it.
Live text is a courtesy: a failed write is logged and the call goes on; the step's transition is the record.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid

from infra.store.step_streams import StepStreams

INTERVAL = 0.05
CLOSE_TIMEOUT = 5.0  # how long the last write may take before the call returns without it

log = logging.getLogger("mint.activities")


class LiveText:
    """One attempt of one model call's text, published while the call runs; close() publishes the end."""

    def __init__(self, streams: StepStreams, execution: str, key: str, step: str, attempt: int):
        self.streams = streams
        self.where = (execution, key, step)
        self.run = str(uuid.uuid4())  # this attempt's, even when a lost worker's attempt had its number
        self.attempt = attempt
        self.pieces: list[str] = []
        self._dirty = asyncio.Event()
        self._closing = asyncio.Event()
        self._writer: asyncio.Task[None] | None = None
        self._failed = False

    async def piece(self, text: str) -> None:
        """A piece of the answer as the model sends it."""
        self.pieces.append(text)
        self._dirty.set()
        if self._writer is None:
            self._writer = asyncio.create_task(self._write_while_open())

    async def close(self) -> None:
        """The call ended (answered or failed): publish the whole text as the call's last (nothing, for a
        call that wrote no text: a round of tool calls)."""
        if self._writer is None:
            return
        self._closing.set()
        self._dirty.set()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(CLOSE_TIMEOUT):
                await self._writer
                await self._publish(done=True)
                await self.streams.sweep()

    async def _write_while_open(self) -> None:
        while not self._closing.is_set():
            await self._dirty.wait()
            if self._closing.is_set():
                return
            self._dirty.clear()
            await self._publish(done=False)
            with contextlib.suppress(TimeoutError):  # the pause between writes, cut short by close()
                async with asyncio.timeout(INTERVAL):
                    await self._closing.wait()

    async def _publish(self, done: bool) -> None:
        execution, key, step = self.where
        try:
            await self.streams.publish(
                execution, key, step, self.run, self.attempt, "".join(self.pieces), done
            )
        except Exception as exc:  # noqa: BLE001 - live text is a courtesy: the answer goes on regardless
            if not self._failed:
                log.warning("live text of %s not published: %s: %s", step, type(exc).__name__, exc)
            self._failed = True
