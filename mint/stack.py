"""Run Mint's long-lived parts (API and/or worker) against a Postgres URL and a Temporal address."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import uvicorn

from api.app import create_app
from mint.db import connect_pool, migrate
from mint.reconciler import Reconciler, ReconcilerSettings
from mint.settings import Settings
from mint.store import Store
from mint.temporal import connect_from_settings


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling: `mint` stops the API, worker and services in order."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def _cancel(task: asyncio.Task) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


@dataclass
class StackOptions:
    database_url: str
    temporal_address: str
    run_api: bool = True
    run_worker: bool = True
    default_key: str | None = None  # ensure a developer owns this key (mint up)


async def run_stack(
    settings: Settings,
    options: StackOptions,
    started: asyncio.Event | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Serve until `stop` is set (or the task is cancelled); set `started` once requests can be served."""
    from worker import build_worker

    pool = await connect_pool(options.database_url, max_size=20)
    http = httpx.AsyncClient(trust_env=False)  # no proxies from the environment: egress is checked here
    try:
        await migrate(pool)
        store = Store(pool)
        if options.default_key:
            await store.ensure_developer_key("default", options.default_key)
        temporal = await connect_from_settings(settings, pool, options.temporal_address)
        async with contextlib.AsyncExitStack() as parts:
            if options.run_worker:
                worker = build_worker(temporal, pool, http, settings)
                await parts.enter_async_context(worker)
                reconciler = Reconciler(
                    store, temporal, ReconcilerSettings(settings.reconcile_interval, settings.reconcile_quiet)
                )
                parts.push_async_callback(_cancel, asyncio.create_task(reconciler.run_forever()))
            server = None
            if options.run_api:
                config = uvicorn.Config(
                    create_app(store, temporal, settings),
                    host=settings.api_host,
                    port=settings.api_port,
                    log_level="warning",
                    lifespan="off",
                )
                server = _Server(config)
                serving = asyncio.create_task(server.serve())
                while not server.started and not serving.done():
                    await asyncio.sleep(0.02)
                if serving.done():
                    serving.result()
                    raise RuntimeError(f"the API could not listen on {settings.api_host}:{settings.api_port}")
            if started:
                started.set()
            try:
                await (stop.wait() if stop else asyncio.Event().wait())
            finally:
                if server:
                    server.should_exit = True
                    await serving
    finally:
        await http.aclose()
        await pool.close()
