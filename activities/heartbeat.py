"""Heartbeats for activities that call out, so a worker that dies mid-call is noticed within the step's
heartbeat timeout (contracts/liveness.py), not at the end of the call's whole start-to-close timeout."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from temporalio import activity

from contracts.liveness import HEARTBEAT_EVERY


@contextlib.asynccontextmanager
async def heartbeating(every: float = HEARTBEAT_EVERY) -> AsyncIterator[None]:
    """Heartbeat while a call runs, so that Temporal notices a dead worker within the heartbeat timeout
    (seconds), not at the end of the call's whole start-to-close timeout. A local activity sends none: the
    workflow task it runs in is kept alive by the worker instead, and a lost worker fails that task."""
    if not activity.in_activity() or activity.info().is_local:  # (called directly, e.g. by a bench)
        yield
        return

    async def beat() -> None:
        # The first beat waits: a short call sends none (each is a request to Temporal), and the heartbeat
        # timeout counts from the activity's start anyway.
        while True:
            await asyncio.sleep(every)
            activity.heartbeat()

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
