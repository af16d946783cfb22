"""System tools: a task calls Mint's own operations (agents, users, tasks, executions, docs, sessions).

Each call goes through Mint's own HTTP API, in process (an ASGI transport, no socket), as the execution's
developer: the same validation, tenancy (row-level security included) and answers as a client gets. Which
route each operation is, and how Julep shapes its answer, is the table in workflows/system_ops.py; here the
call's Julep-style arguments become that request, and the answer takes Julep's shape. The in-process app is
never served on a port, so its caller cannot be spoofed; ids are checked to be UUIDs before they go into a
path, so no `../` can change the route.
"""

from __future__ import annotations

import contextvars
import json
import re
import uuid
from dataclasses import dataclass
from urllib.parse import quote

import httpx
from fastapi import FastAPI
from temporalio import activity

from activities.heartbeat import heartbeating
from contracts.calls import CallAnswer, SystemCallRequest
from contracts.json import JsonObject, JsonValue
from contracts.temporal import CALL_SYSTEM
from infra.temporal import errors
from workflows.system_ops import OPERATIONS, Key, dotted, operation_key

_caller: contextvars.ContextVar[str] = contextvars.ContextVar("system_tool_caller")

# Julep's create operations take their body under `data` (`agent.doc.create`, `task.execution.create`), its
# searches under `search_params`; both are unwrapped into the request body.
BODY_WRAPPERS = ("data", "search_params")


def system_caller() -> str:
    """The developer whose execution is making the system call in progress: the in-process app acts for it
    (api/app.py create_internal_app)."""
    return _caller.get()


@dataclass
class ApiRequest:
    """One system call as an HTTP request to Mint's API."""

    method: str
    path: str
    params: dict[str, str | int | float | bool] | None
    body: JsonObject | None


def plan(key: Key, spec: JsonObject, arguments: JsonObject) -> ApiRequest:
    """The request for a call: ids from the arguments into the path, the rest into the query (reads) or the
    body (writes, with Julep's `data` unwrapped)."""
    op, arguments = OPERATIONS[key], dict(arguments)
    own = f"{key[0]}_id"
    for alias in (arguments.pop("id", None), spec.get("resource_id")):
        if alias and not arguments.get(own):
            arguments[own] = alias
    path = op.path
    if op.path_with_id and arguments.get(own):
        path = op.path_with_id
    for name in re.findall(r"\{(\w+)\}", path):
        path = path.replace(f"{{{name}}}", _path_id(key, name, arguments.pop(name, None)))
    if op.method in ("GET", "DELETE"):
        return ApiRequest(op.method, path, _query(arguments), None)
    body = {k: v for k, v in arguments.items() if k not in BODY_WRAPPERS}
    for wrapper in BODY_WRAPPERS:
        if isinstance(wrapped := arguments.get(wrapper), dict):
            body |= wrapped
    return ApiRequest(op.method, path, None, body)


def _path_id(key: Key, name: str, given: JsonValue) -> str:
    """An id as a path segment: a UUID (every Mint id is one), so that `../secrets`, an encoded slash or any
    other text can never reach another route."""
    if not given:
        raise errors.permanent(f"system operation {dotted(key)} needs `{name}`", "BadSystemCall")
    try:
        checked = uuid.UUID(str(given))
    except ValueError:
        shown = str(given)[:80]
        raise errors.permanent(
            f"system operation {dotted(key)}: `{name}` must be a UUID, not {shown!r}", "BadSystemCall"
        ) from None
    return quote(str(checked), safe="")


def _query(arguments: JsonObject) -> dict[str, str | int | float | bool]:
    """Query parameters: scalars as they are, a mapping (`metadata_filter`) as JSON, which the API reads."""
    params: dict[str, str | int | float | bool] = {}
    for name, value in arguments.items():
        if isinstance(value, str | int | float | bool):
            params[name] = value
        elif isinstance(value, dict):
            params[name] = json.dumps(value)
    return params


def shaped(key: Key, answer: JsonValue) -> JsonValue:
    """The API's answer as Julep's system tools return it (workflows/system_ops.py, `shape`)."""
    shape = OPERATIONS[key].shape
    if shape in ("items", "docs") and isinstance(answer, dict):
        items = answer.get("items", [])
        return [_doc(d) for d in items] if shape == "docs" and isinstance(items, list) else items
    if shape == "doc":
        return _doc(answer)
    if shape == "history" and isinstance(answer, dict):
        entries = answer.get("entries", [])
        return {**answer, "entries": [_entry(e) for e in entries] if isinstance(entries, list) else entries}
    return answer


def _doc(doc: JsonValue) -> JsonValue:
    """Julep stores a doc as chunks and answers `content` as their list, even for one."""
    if isinstance(doc, dict) and isinstance(content := doc.get("content"), str):
        return {**doc, "content": [content]}
    return doc


def _entry(entry: JsonValue) -> JsonValue:
    """Julep's history entries carry `content` as a list of parts (`[{"type": "text", "text": ...}]`); Mint
    keeps a plain message's text as a string, which its HTTP API answers unchanged."""
    if not isinstance(entry, dict):
        return entry
    content = entry.get("content")
    if content is None:
        parts: JsonValue = []
    elif isinstance(content, str):
        parts = [{"type": "text", "text": content}]
    elif isinstance(content, list):
        parts = [{"type": "text", "text": p} if isinstance(p, str) else p for p in content]
    else:
        parts = content
    return {**entry, "content": parts}


class SystemActivities:
    def __init__(self, app: FastAPI):
        self.client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://mint.internal"
        )

    @activity.defn(name=CALL_SYSTEM)
    async def call_system(self, request: SystemCallRequest) -> CallAnswer:
        """The operation's answer, shaped as Julep's; a 4xx is not retried."""
        async with heartbeating():
            return await self._call(request)

    async def _call(self, request: SystemCallRequest) -> CallAnswer:
        spec = request.system
        try:
            key = operation_key(spec)
        except ValueError as exc:
            raise errors.permanent(str(exc), "UnknownSystemOperation") from None
        call = plan(key, spec, request.arguments or {})
        token = _caller.set(request.developer_id)
        try:
            response = await self.client.request(call.method, call.path, params=call.params, json=call.body)
        finally:
            _caller.reset(token)
        body: JsonValue = response.json() if response.content else None
        if response.status_code >= 500:
            raise errors.transient(f"system operation failed ({response.status_code})", "SystemUnavailable")
        if response.status_code >= 400:
            error = (
                body.get("error") if isinstance(body, dict) else None
            )  # Julep's shape: {message, code, ...}
            detail = error.get("message") if isinstance(error, dict) else error
            raise errors.permanent(
                f"{dotted(key)} ({call.method} {call.path}) answered {response.status_code}: {detail or body}",
                "SystemCallRefused",
            )
        return CallAnswer(response=shaped(key, body), attempt=activity.info().attempt)

    async def close(self) -> None:
        await self.client.aclose()
