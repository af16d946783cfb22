"""Run Mint's long-lived parts (API and/or worker) against a Postgres URL and a Temporal address."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import asyncpg
import httpx
import uvicorn

from api.app import create_app
from mint.settings import Settings
from mint.store import Store
from mint.store.db import connect_pool, migrate
from mint.temporal.client import connect_from_settings
from mint.temporal.reconciler import Reconciler, ReconcilerSettings


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


# A request's single statement may run this long before Postgres cancels it (the API answers 503): no
# request holds a connection for minutes.
API_STATEMENT_TIMEOUT = 60.0


async def _pools(
    settings: Settings, options: StackOptions
) -> tuple[asyncpg.Pool | None, asyncpg.Pool | None]:
    """The worker's pool and the API's, each only if that part runs: separate, so that a flood of requests
    cannot starve executions of connections, nor a flood of activities the API."""
    url, wait = options.database_url, settings.db_acquire_timeout
    worker = (
        await connect_pool(url, max_size=settings.worker_db_pool_size, acquire_timeout=wait)
        if options.run_worker
        else None
    )
    api = (
        await connect_pool(
            url,
            max_size=settings.api_db_pool_size,
            acquire_timeout=wait,
            statement_timeout=API_STATEMENT_TIMEOUT,
        )
        if options.run_api
        else None
    )
    return worker, api


async def _close(pool: asyncpg.Pool | None, grace: float) -> None:
    """Close a pool, waiting at most `grace` seconds for connections still in use."""
    if pool is None:
        return
    try:
        await asyncio.wait_for(pool.close(), grace)
    except TimeoutError:
        pool.terminate()


async def run_stack(
    settings: Settings,
    options: StackOptions,
    started: asyncio.Event | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Serve until `stop` is set (or the task is cancelled); set `started` once requests can be served.
    Stopping takes a bounded time: requests and activities get `settings.shutdown_grace_seconds` to finish,
    then they are cut off."""
    from worker import build_worker

    worker_pool = api_pool = None
    http = httpx.AsyncClient(trust_env=False)  # no proxies from the environment: egress is checked here
    try:
        worker_pool, api_pool = await _pools(settings, options)
        main_pool = worker_pool or api_pool
        assert main_pool is not None, "run_stack needs the API, the worker or both"
        await migrate(main_pool)
        if options.default_key:
            await Store(main_pool).ensure_developer_key("default", options.default_key)
        temporal = await connect_from_settings(settings, main_pool, options.temporal_address)
        async with contextlib.AsyncExitStack() as parts:
            if worker_pool is not None:
                worker = build_worker(temporal, worker_pool, http, settings)
                await parts.enter_async_context(worker)
                reconciler = Reconciler(
                    Store(worker_pool),
                    temporal,
                    ReconcilerSettings(settings.reconcile_interval, settings.reconcile_quiet),
                )
                parts.push_async_callback(_cancel, asyncio.create_task(reconciler.run_forever()))
            server = None
            if api_pool is not None:
                config = uvicorn.Config(
                    create_app(Store(api_pool), temporal, settings),
                    host=settings.api_host,
                    port=settings.api_port,
                    log_level="warning",
                    lifespan="off",
                    timeout_graceful_shutdown=max(1, round(settings.shutdown_grace_seconds)),
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
        for pool in (api_pool, worker_pool):
            await _close(pool, settings.shutdown_grace_seconds)
