"""The FastAPI application: routes, error handlers, and the clients their services share."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable

from fastapi import Depends, FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from api.deps import get_developer
from api.errors import install_error_handlers
from api.limits import RateLimiter
from api.request_check import check_request
from api.routes import (
    agents,
    codec,
    developer,
    docs,
    executions,
    files,
    jobs,
    metrics,
    projects,
    schedules,
    secrets,
    sessions,
    tasks,
    users,
)
from api.warning_header import WarningHeader
from infra.settings import Settings
from services.chat.chatter import Chatter
from services.chat.slots import ChatSlots
from services.clients import Clients
from services.tenancy import acting_for


class ActingForNoTenant:
    """ASGI middleware: each request starts acting for no tenant. A server may start a request in a copy of
    the previous request's context (uvicorn does, on a keep-alive connection), which would otherwise carry
    that request's tenant into this one's first queries."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        with acting_for(None):
            await self.app(scope, receive, send)


def create_app(clients: Clients, settings: Settings, serve_mcp: bool = True) -> FastAPI:
    """The API; without /mcp when `serve_mcp` is false (the internal app: the MCP SDK is 0.8 s of a
    worker's start, imported here only when served)."""
    if serve_mcp:
        from api import mcp_server

    mcp = mcp_server.McpServer(clients, settings) if serve_mcp else None

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        # /mcp answers only inside (api/mcp_server.py); run_stack enters it
        async with mcp.run() if mcp else contextlib.nullcontext():
            yield

    app = FastAPI(
        title="Mint",
        version="0.1.0",
        description="A durable workflow engine for AI agents, speaking Julep's v1 REST API.",
        max_body_size=settings.max_body_bytes,
        dependencies=[Depends(check_request)],  # every request's values, checked in one place
        lifespan=lifespan,
    )
    app.state.clients = clients  # what routes hand the services (api/deps.py ClientsDep)
    app.state.settings = settings
    app.state.mcp = mcp
    app.state.rate_limiter = RateLimiter(settings.rate_limit_per_minute)
    app.state.chatter = Chatter(
        clients.store,
        clients.docs,
        clients.embedders,
        clients.models,
        clients.temporal,
        settings.task_queue,
        ChatSlots(settings.max_chats_per_developer),
        settings.max_tool_timeout,
        settings.adaptive_context_start,
    )
    install_error_handlers(app)
    app.add_middleware(ActingForNoTenant)
    app.add_middleware(WarningHeader)
    routers = (agents, users, tasks, executions, schedules, docs, sessions, secrets, files, projects, jobs)
    for module in (*routers, codec, metrics, developer):
        app.include_router(module.router)
    if serve_mcp:
        app.include_router(mcp_server.router)

    @app.get("/healthz", tags=["health"])
    async def healthz() -> dict[str, object]:
        await clients.ping()
        return {"status": "ok"}

    return app


def create_internal_app(clients: Clients, settings: Settings, caller: Callable[[], str]) -> FastAPI:
    """The app system tools call in process (activities/system.py): never served on a port, and every
    request acts for `caller()`, the developer of the execution making the call, as a request with that
    developer's key would (row-level security included). It has no /mcp."""
    app = create_app(clients, settings, serve_mcp=False)

    async def acting_caller() -> AsyncIterator[str]:
        developer_id = caller()
        with acting_for(developer_id):
            yield developer_id

    app.dependency_overrides[get_developer] = acting_caller
    return app
