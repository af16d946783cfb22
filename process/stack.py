"""The composition root: the one place that builds Mint's parts (pools, Store, Temporal client, model
client, the activities and the API) and runs them (API and/or worker) against a Postgres URL and a
Temporal address. Every layer below gets what it needs as arguments."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import asyncpg
import httpx
import uvicorn
from fastapi import FastAPI
from temporalio.client import Client
from temporalio.worker import Worker

from activities.docs import DocActivities
from activities.egress import EgressPolicy
from activities.http import HttpActivities
from activities.integrations import IntegrationActivities
from activities.mcp import McpActivities
from activities.models import ModelActivities
from activities.observe import ActivityObserver
from activities.sessions import SessionActivities
from activities.system import SystemActivities, system_caller
from activities.transitions import TransitionWriter
from activities.webhooks import WebhookActivities
from api.app import create_app, create_internal_app
from infra.models import sdks
from infra.models.client import model_client
from infra.models.embeddings import Embedders, EmbeddingChoice, embedder_for, loaded
from infra.settings import Settings
from infra.store.budgets import Budgets
from infra.store.counts import live_executions
from infra.store.db import connect_pool, migrate
from infra.store.developer_settings import DeveloperEmbedding
from infra.store.docs import DocStore
from infra.store.execution_events import ExecutionEvents
from infra.store.secrets import SecretStore
from infra.store.step_streams import StepStreams
from infra.store.tables import Store
from infra.store.webhook_secrets import WebhookSecrets
from infra.telemetry.metrics import Metrics, metrics_app
from infra.telemetry.tracing import Tracing
from infra.temporal.client import connect_from_settings
from infra.temporal.reconciler import Reconciler, ReconcilerSettings
from infra.temporal.search_attributes import resolve_search_attributes
from process.scheduled_runs import ScheduledRuns
from process.worker import WorkerActivities, build_workers
from services.clients import Clients


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling: `mint` stops the API, worker and services in order."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def _cancel(task: asyncio.Task[None]) -> None:
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


class CannotStart(RuntimeError):
    """A service the stack needs cannot be reached at start: `mint api` / `mint worker` say so in a line."""


async def _pools(
    settings: Settings, options: StackOptions
) -> tuple[asyncpg.Pool | None, asyncpg.Pool | None]:
    """The worker's pool and the API's, each only if that part runs: separate, so that a flood of requests
    cannot starve executions of connections, nor a flood of activities the API."""
    url, wait = options.database_url, settings.db_acquire_timeout
    try:
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
    except (OSError, asyncpg.PostgresError) as exc:
        raise CannotStart(f"cannot connect to Postgres (MINT_DATABASE_URL): {exc}") from None
    return worker, api


async def _temporal(settings: Settings, pool: asyncpg.Pool, address: str, interceptors: list[Any]) -> Client:
    """The Temporal client (infra/temporal/client.py); an unreachable server stops the start with a line."""
    try:
        return await connect_from_settings(settings, pool, address, interceptors)
    except RuntimeError as exc:  # the SDK's "Failed client connect: ..."
        raise CannotStart(f"cannot connect to Temporal at {address}: {exc}") from None


def _reconciler(pool: asyncpg.Pool, temporal: Client, settings: Settings) -> Reconciler:
    """The loop that ends executions whose workflow can no longer end them (infra/temporal/reconciler.py)."""
    return Reconciler(
        Store(pool),
        temporal,
        ReconcilerSettings(
            settings.reconcile_interval, settings.reconcile_quiet, task_queue=settings.task_queue
        ),
    )


async def _close(pool: asyncpg.Pool | None, grace: float) -> None:
    """Close a pool, waiting at most `grace` seconds for connections still in use."""
    if pool is None:
        return
    try:
        await asyncio.wait_for(pool.close(), grace)
    except TimeoutError:
        pool.terminate()


def app_clients(
    pool: asyncpg.Pool,
    temporal: Client,
    settings: Settings,
    events: ExecutionEvents,
    metrics: Metrics | None = None,
) -> Clients:
    """The clients an API app uses, on `pool`: the served API's, or the worker's in-process one."""
    secrets = SecretStore(pool, settings.encryption_keys)
    models = model_client(settings, secrets)  # with secrets: developers' own provider keys are used
    embedders = embedders_for(pool, settings)
    return Clients(Store(pool), temporal, DocStore(pool), secrets, embedders, models, events, metrics)


def embedders_for(pool: asyncpg.Pool, settings: Settings) -> Embedders:
    """Each developer's embedder: the server's (settings), or the one their settings in `pool` choose."""
    key, base_url = settings.openai_api_key, settings.openai_base_url
    server_choice = EmbeddingChoice(settings.embedding_model, settings.embedding_dimensions)
    return Embedders(embedder_for(server_choice, key, base_url), _embedding_choice(pool), key, base_url)


def _embedding_choice(pool: asyncpg.Pool) -> Callable[[str], Awaitable[EmbeddingChoice | None]]:
    """A developer's embedding model, read from their settings at each use (a change applies at once)."""
    settings = DeveloperEmbedding(pool)

    async def chosen(developer_id: str) -> EmbeddingChoice | None:
        found = await settings.get(developer_id)
        return EmbeddingChoice(*found) if found else None

    return chosen


def api_app(
    pool: asyncpg.Pool,
    temporal: Client,
    settings: Settings,
    events: ExecutionEvents,
    metrics: Metrics | None = None,
) -> FastAPI:
    """The API that `mint api` and `mint up` serve, with the operator's /metrics."""
    metrics = metrics or Metrics()
    metrics.count_executions = lambda: live_executions(pool)
    metrics.included = settings.metrics_include
    metrics.include_token = settings.metrics_port_token()  # what the included processes' ports ask for
    return create_app(app_clients(pool, temporal, settings, events, metrics), settings)


def worker_for(
    temporal: Client,
    pool: asyncpg.Pool,
    http: httpx.AsyncClient,
    settings: Settings,
    events: ExecutionEvents,
    metrics: Metrics | None = None,
    tracing: Tracing | None = None,
) -> list[Worker]:
    """The workers (one per task queue polled), their activities built with their clients. The model client, secrets and stores are the
    same ones the in-process API (which system tools call) uses."""
    clients = app_clients(pool, temporal, settings, events)
    egress = EgressPolicy(settings.egress_allow)
    # httpx logs every request's URL at INFO, and a tool's URL may carry a secret (activities/secrets.py).
    logging.getLogger("httpx").setLevel(logging.WARNING)
    tools = HttpActivities(http, egress, clients.secrets, settings.max_tool_timeout)
    activities = WorkerActivities(
        writer=TransitionWriter(pool, metrics, tracing),
        tools=tools,
        models=ModelActivities(
            clients.models, Budgets(pool), settings.worker_max_model_calls, StepStreams(pool)
        ),
        system=SystemActivities(create_internal_app(clients, settings, system_caller)),
        mcp=McpActivities(settings.mcp_servers, egress),
        integrations=IntegrationActivities(
            tools, settings.integration_base_urls, (settings.smtp_host, settings.smtp_port)
        ),
        docs=DocActivities(clients.docs, clients.embedders),
        sessions=SessionActivities(clients.store, clients.models),
        schedules=ScheduledRuns(clients, settings),
        webhooks=WebhookActivities(http, egress, WebhookSecrets(pool)),
    )
    return build_workers(temporal, activities, settings, [ActivityObserver(metrics)])


@contextlib.asynccontextmanager
async def _serving(app: Any, settings: Settings, port: int | None = None) -> AsyncIterator[None]:
    """The API served on its port (or `app` on `port` of the metrics host) for the block; once it ends,
    requests in flight get the grace period."""
    host = settings.api_host if port is None else settings.metrics_host
    port = settings.api_port if port is None else port
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        log_config=None,  # uvicorn's records go to the process's handler (infra/telemetry/logs.py)
        lifespan="off",  # what the app needs is started and stopped here, by run_stack
        timeout_graceful_shutdown=max(1, round(settings.shutdown_grace_seconds)),
    )
    server = _Server(config)
    serving = asyncio.create_task(server.serve())
    while not server.started and not serving.done():
        await asyncio.sleep(0.02)
    if serving.done():
        serving.result()
        raise RuntimeError(f"could not listen on {host}:{port}")
    try:
        yield
    finally:
        server.should_exit = True
        await serving


async def run_stack(
    settings: Settings,
    options: StackOptions,
    started: asyncio.Event | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Serve until `stop` is set (or the task is cancelled); set `started` once requests can be served.
    Stopping takes a bounded time: requests and activities get `settings.shutdown_grace_seconds` to finish,
    then they are cut off."""
    worker_pool = api_pool = None
    # No proxies from the environment: egress is checked here. No cap on connections either: httpx's default
    # of 100 would be one queue, first come first served, that one developer's calls could fill; the worker's
    # activity slots and the calls per developer (activities/tenant_limits.py) bound them instead.
    http = httpx.AsyncClient(trust_env=False, limits=httpx.Limits(max_connections=None))
    # One per process, listening only where the API runs: the worker's in-process API (system tools) shares it.
    events = ExecutionEvents(options.database_url, settings.stream_poll_seconds)
    tracing = Tracing(settings.otlp_endpoint) if settings.otlp_endpoint else None
    try:
        worker_pool, api_pool = await _pools(settings, options)
        main_pool = worker_pool or api_pool
        assert main_pool is not None, "run_stack needs the API, the worker or both"
        metrics = Metrics()
        for name, pool in (("worker", worker_pool), ("api", api_pool)):
            if pool is not None:
                metrics.watch_pool(name, pool)
        await migrate(main_pool)
        if options.default_key:
            await Store(main_pool).ensure_developer_key("default", options.default_key)
        interceptors = [tracing.interceptor()] if tracing else []
        temporal = await _temporal(settings, main_pool, options.temporal_address, interceptors)
        if api_pool is not None:  # the API starts the workflows, with Mint's search attributes or without
            settings = await resolve_search_attributes(settings, temporal)
            # Before serving, no request waits for the embedding model to load; a worker polls meanwhile.
            await loaded(settings.embedding_model)
        async with contextlib.AsyncExitStack() as parts:
            if worker_pool is not None:
                for worker in worker_for(temporal, worker_pool, http, settings, events, metrics, tracing):
                    await parts.enter_async_context(worker)
                reconciling = asyncio.create_task(_reconciler(worker_pool, temporal, settings).run_forever())
                parts.push_async_callback(_cancel, reconciling)
            if api_pool is not None:
                await parts.enter_async_context(events)  # stopped after the server (exit runs in reverse)
                app = api_app(api_pool, temporal, settings, events, metrics)
                await parts.enter_async_context(app.router.lifespan_context(app))  # /mcp's (api/app.py)
                await parts.enter_async_context(_serving(app, settings))
            if settings.metrics_port is not None:
                port_app = metrics_app(metrics, settings.metrics_port_token())
                await parts.enter_async_context(_serving(port_app, settings, settings.metrics_port))
            if worker_pool is None:  # an API alone: its chats' SDKs, imported as it serves (models/sdks.py)
                sdks.warm()
            if started:
                started.set()
            await (stop.wait() if stop else asyncio.Event().wait())
    finally:
        await http.aclose()
        if tracing is not None:
            await asyncio.to_thread(tracing.shutdown)  # sends what is queued
        for pool in (api_pool, worker_pool):
            await _close(pool, settings.shutdown_grace_seconds)
