"""System tools: a task calls Mint's own operations (agents, users, tasks, executions, docs, sessions).

Each call goes through Mint's own HTTP API, in process (an ASGI transport, no socket), as the execution's
developer: the same validation, tenancy (row-level security included) and answers as a client gets, and new
routes become callable without code here. The in-process app is never served on a port, so its caller cannot
be spoofed; ids are checked to be UUIDs before they go into a path, so no `../` can change the route.
"""

from __future__ import annotations

import contextvars
import uuid
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import httpx
from fastapi import FastAPI
from temporalio import activity

from activities import errors
from activities.heartbeat import heartbeating
from api.deps import get_developer
from mint.tenancy import acting_as
from workflows.calls import CALL_SYSTEM

_caller: contextvars.ContextVar[str] = contextvars.ContextVar("system_tool_caller")

# (resource, subresource, operation) -> (method, path); `{id}` is the resource's id.
ROUTES: dict[tuple[str, str | None, str], tuple[str, str]] = {}
for _resource, _path in (("agent", "/agents"), ("user", "/users"), ("session", "/sessions")):
    ROUTES |= {
        (_resource, None, "create"): ("POST", _path),
        (_resource, None, "list"): ("GET", _path),
        (_resource, None, "get"): ("GET", _path + "/{id}"),
        (_resource, None, "update"): ("PUT", _path + "/{id}"),
        (_resource, None, "patch"): ("PATCH", _path + "/{id}"),
        (_resource, None, "delete"): ("DELETE", _path + "/{id}"),
        (_resource, None, "create_or_update"): ("POST", _path + "/{id}"),
    }
for _resource, _path in (("agent", "/agents/{id}"), ("user", "/users/{id}")):
    ROUTES |= {
        (_resource, "doc", "create"): ("POST", _path + "/docs"),
        (_resource, "doc", "list"): ("GET", _path + "/docs"),
        (_resource, "doc", "search"): ("POST", _path + "/search"),
    }
ROUTES |= {
    ("agent", "tool", "list"): ("GET", "/agents/{id}/tools"),
    ("agent", "tool", "create"): ("POST", "/agents/{id}/tools"),
    ("agent", "task", "list"): ("GET", "/agents/{id}/tasks"),
    ("agent", "task", "create"): ("POST", "/agents/{id}/tasks"),
    ("task", None, "get"): ("GET", "/tasks/{id}"),
    ("task", "execution", "create"): ("POST", "/tasks/{id}/executions"),
    ("task", "execution", "list"): ("GET", "/tasks/{id}/executions"),
    ("execution", None, "get"): ("GET", "/executions/{id}"),
    ("execution", None, "change_status"): ("PUT", "/executions/{id}"),
    ("execution", "transition", "list"): ("GET", "/executions/{id}/transitions"),
    ("doc", None, "get"): ("GET", "/docs/{id}"),
    ("doc", None, "search"): ("POST", "/search"),
    ("session", None, "chat"): ("POST", "/sessions/{id}/chat"),
    ("session", None, "history"): ("GET", "/sessions/{id}/history"),
    ("session", None, "render"): ("POST", "/sessions/{id}/render"),
}


def internal_app(app: FastAPI) -> FastAPI:
    """Turn a freshly created app into the in-process one: the caller is the execution's developer."""
    app.dependency_overrides[get_developer] = _acting_caller
    return app


async def _acting_caller() -> AsyncIterator[str]:
    """What get_developer does once a key names the developer: the request acts for it, under row-level
    security, as any API request does."""
    developer_id = _caller.get()
    with acting_as(developer_id):
        yield developer_id


def operation(spec: dict[str, Any]) -> tuple[str, str | None, str]:
    """A system tool's (resource, subresource, operation), from Julep's fields or the dotted `call`
    shorthand (`agent.doc.create`, `session.chat`)."""
    if spec.get("call"):
        parts = str(spec["call"]).split(".")
        if len(parts) == 2:
            return parts[0], None, parts[1]
        if len(parts) == 3:
            return parts[0], parts[1], parts[2]
        raise ValueError(
            f"system call {spec['call']!r} must look like `resource.operation` or `resource.sub.op`"
        )
    return str(spec.get("resource")), spec.get("subresource"), str(spec.get("operation"))


def _resource_id(key: tuple[str, str | None, str], spec: dict[str, Any], arguments: dict[str, Any]) -> str:
    """The call's resource id as a path segment: a UUID (every Mint id is one), so that `../secrets`, an
    encoded slash or any other text can never reach another route."""
    name = ".".join(p for p in key if p)
    given = arguments.pop("id", None) or spec.get("resource_id") or arguments.pop(f"{key[0]}_id", None)
    if not given:
        raise errors.permanent(f"system operation {name} needs an `id`", "BadSystemCall")
    try:
        checked = uuid.UUID(str(given))
    except ValueError:
        shown = str(given)[:80]
        raise errors.permanent(
            f"system operation {name}: `id` must be a UUID, not {shown!r}", "BadSystemCall"
        ) from None
    return quote(str(checked), safe="")


class SystemActivities:
    def __init__(self, app: FastAPI):
        self.client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://mint.internal"
        )

    @activity.defn(name=CALL_SYSTEM)
    async def call_system(self, request: dict[str, Any]) -> dict[str, Any]:
        """{developer_id, system: spec, arguments} -> {response, attempt}; a 4xx is not retried."""
        async with heartbeating():
            return await self._call(request)

    async def _call(self, request: dict[str, Any]) -> dict[str, Any]:
        spec, arguments = request["system"], dict(request.get("arguments") or {})
        try:
            key = operation(spec)
        except ValueError as exc:
            raise errors.permanent(str(exc), "UnknownSystemOperation") from None
        route = ROUTES.get(key)
        if route is None:
            known = ", ".join(sorted(".".join(p for p in k if p) for k in ROUTES))
            raise errors.permanent(
                f"unknown system operation {'.'.join(p for p in key if p)}; known: {known}",
                "UnknownSystemOperation",
            )
        method, path = route
        if "{id}" in path:
            path = path.replace("{id}", _resource_id(key, spec, arguments))
        token = _caller.set(request["developer_id"])
        try:
            if method in ("GET", "DELETE"):
                params = {k: v for k, v in arguments.items() if isinstance(v, str | int | float | bool)}
                response = await self.client.request(method, path, params=params)
            else:
                response = await self.client.request(method, path, json=arguments)
        finally:
            _caller.reset(token)
        body = response.json() if response.content else None
        if response.status_code >= 500:
            raise errors.transient(f"system operation failed ({response.status_code})", "SystemUnavailable")
        if response.status_code >= 400:
            detail = body.get("error") if isinstance(body, dict) else None
            raise errors.permanent(
                f"{method} {path} answered {response.status_code}: {detail or body}", "SystemCallRefused"
            )
        return {"response": body, "attempt": activity.info().attempt}

    async def close(self) -> None:
        await self.client.aclose()
