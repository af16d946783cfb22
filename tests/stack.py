"""A real Mint stack (API + worker) in a background thread, as `mint up` runs it, for tests and bench."""

from __future__ import annotations

import asyncio
import socket
import threading
from dataclasses import replace
from typing import Any

from mint.settings import Settings
from mint.stack import StackOptions, run_stack


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class BackgroundStack:
    """Runs run_stack() on its own event loop in a thread; `url` is the API's base URL."""

    def __init__(
        self,
        database_url: str,
        temporal_address: str,
        *,
        run_worker: bool = True,
        run_api: bool = True,
        **settings: Any,
    ):
        """`settings` override Settings fields (task_queue, max_history_events, reconcile_interval, ...)."""
        settings.setdefault("egress_allow", ("127.0.0.1", "localhost"))
        self.settings = replace(Settings(), api_port=free_port(), **settings)
        self.options = StackOptions(database_url, temporal_address, run_api=run_api, run_worker=run_worker)
        self.url = f"http://127.0.0.1:{self.settings.api_port}"
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            started = asyncio.Event()
            runner = asyncio.create_task(run_stack(self.settings, self.options, started, self._stop))
            await asyncio.wait(
                [runner, asyncio.create_task(started.wait())], return_when=asyncio.FIRST_COMPLETED
            )
            self._started.set()
            await runner

        try:
            asyncio.run(main())
        except BaseException as exc:  # reported to the test thread
            self._error = exc
            self._started.set()

    def start(self) -> BackgroundStack:
        self._thread.start()
        self._started.wait(120)
        if self._error:
            raise RuntimeError("the Mint stack failed to start") from self._error
        return self

    def stop(self) -> None:
        if self._loop and self._stop:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(60)
