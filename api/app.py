"""The FastAPI application: routes, error handlers, and the clients they share."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import Depends, FastAPI
from temporalio.client import Client

from activities.models import model_client
from api.deps import get_developer
from api.errors import install_error_handlers
from api.limits import RateLimiter
from api.request_check import check_request
from api.routes import agents, codec, docs, executions, secrets, sessions, tasks, users
from mint.docs import DocStore
from mint.secrets import SecretStore
from mint.settings import Settings
from mint.store import Store
from mint.tenancy import ActingForNoTenant, acting_as
from services.chat.chatter import Chatter
from services.chat.slots import ChatSlots


def create_app(store: Store, temporal: Client, settings: Settings) -> FastAPI:
    app = FastAPI(
        title="Mint",
        version="0.1.0",
        description="A durable workflow engine for AI agents, speaking Julep's v1 REST API.",
        max_body_size=settings.max_body_bytes,
        dependencies=[Depends(check_request)],  # every request's values, checked in one place
    )
    app.state.store = store
    app.state.temporal = temporal
    app.state.settings = settings
    app.state.rate_limiter = RateLimiter(settings.rate_limit_per_minute)
    app.state.docs = DocStore(store.pool)
    app.state.secrets = SecretStore(store.pool, settings.encryption_keys)
    app.state.embedder = settings.embedder()
    app.state.chatter = Chatter(
        store,
        app.state.docs,
        app.state.embedder,
        model_client(settings, app.state.secrets),
        temporal,
        settings.task_queue,
        ChatSlots(settings.max_chats_per_developer),
        settings.max_tool_timeout,
    )
    install_error_handlers(app)
    app.add_middleware(ActingForNoTenant)
    for module in (agents, users, tasks, executions, docs, sessions, secrets, codec):
        app.include_router(module.router)

    @app.get("/healthz", tags=["health"])
    async def healthz() -> dict[str, Any]:
        await store.ping()
        return {"status": "ok"}

    return app


def create_internal_app(
    store: Store, temporal: Client, settings: Settings, caller: Callable[[], str]
) -> FastAPI:
    """The app system tools call in process (activities/system.py): never served on a port, and every
    request acts for `caller()`, the developer of the execution making the call, as a request with that
    developer's key would (row-level security included)."""
    app = create_app(store, temporal, settings)

    async def acting_caller() -> AsyncIterator[str]:
        developer_id = caller()
        with acting_as(developer_id):
            yield developer_id

    app.dependency_overrides[get_developer] = acting_caller
    return app
