"""`browserbase`: Julep's Browserbase methods, through Browserbase's REST API (v1, the key in X-BB-API-Key)
as its SDK calls it. These manage hosted browser sessions; driving a session's browser (its `connect_url`,
over the Chrome DevTools Protocol) is `remote_browser`'s part.

- list_sessions: GET /v1/sessions (?status=) -> {sessions: [Browserbase's session objects]}
- create_session: POST /v1/sessions {projectId (the step's or setup's), browserSettings, extensionId, and
  timeout, keepAlive, proxies when the step gives them} -> {id, connect_url, createdAt, projectId, startedAt,
  endedAt, expiresAt, status, proxyBytes, avgCpuUsage, memoryUsage, keepAlive, contextId}
- get_session: GET /v1/sessions/{id} -> the same, without connect_url
- complete_session: POST /v1/sessions/{id} {projectId, status: REQUEST_RELEASE} -> {success} (false when
  Browserbase refuses, as in Julep)
- get_live_urls: GET /v1/sessions/{id}/debug -> {urls: {debuggerFullscreenUrl, debuggerUrl, pages, wsUrl}}
- install_extension_from_github: downloads https://github.com/{repository_name}/archive/refs/tags/{ref}.zip
  (as a file: egress check, size cap, redirects followed and each checked) and uploads it, POST /v1/extensions
  (multipart `file`) -> {id}

setup.api_url and setup.connect_url are taken and not used, as in Julep (whose client uses neither); the API's
address is the operator's MINT_BROWSERBASE_BASE_URL.
"""

from __future__ import annotations

import re
from typing import Any

import httpx

from activities.integrations.common import answer_json, join
from infra.temporal import errors

DEFAULT_BASE_URL = "https://api.browserbase.com"
GITHUB = "https://github.com"
SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,100}")
REPOSITORY = re.compile(r"[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}")
REF = re.compile(r"[A-Za-z0-9_.-]{1,200}")
STATUSES = ("RUNNING", "ERROR", "TIMED_OUT", "COMPLETED")
SESSION_FIELDS = (
    "createdAt",
    "projectId",
    "startedAt",
    "endedAt",
    "expiresAt",
    "status",
    "proxyBytes",
    "avgCpuUsage",
    "memoryUsage",
    "keepAlive",
    "contextId",
)


async def call(service: Any, method: str, setup: dict[str, Any], arguments: dict[str, Any]) -> Any:
    headers = {"X-BB-API-Key": str(setup["api_key"])}
    sessions = join(service.base_url, "/v1/sessions")
    if method == "list_sessions":
        status = arguments.get("status")
        if status is not None and status not in STATUSES:
            raise errors.permanent(
                f"browserbase's `status` must be one of {', '.join(STATUSES)}", "BadToolCall"
            )
        request = {"method": "GET", "url": sessions, "params": {"status": status} if status else None}
        found = answer_json("Browserbase", await service.fetch({**request, "headers": headers}))
        return {"sessions": found if isinstance(found, list) else []}
    if method == "create_session":
        body = _new_session(setup, arguments)
        request = {"method": "POST", "url": sessions, "json": body, "headers": headers}
        session = _session(answer_json("Browserbase", await service.fetch(request)))
        return {"id": session.get("id"), "connect_url": session.get("connectUrl"), **_fields(session)}
    if method == "install_extension_from_github":
        return await _install_extension(service, headers, arguments)
    url = f"{sessions}/{_session_id(arguments)}"
    if method == "get_session":
        session = _session(
            answer_json("Browserbase", await service.fetch({"method": "GET", "url": url, "headers": headers}))
        )
        return {"id": session.get("id"), **_fields(session)}
    if method == "get_live_urls":
        request = {"method": "GET", "url": f"{url}/debug", "headers": headers}
        return {"urls": answer_json("Browserbase", await service.fetch(request))}
    body = {"projectId": setup.get("project_id"), "status": "REQUEST_RELEASE"}
    response = await service.fetch({"method": "POST", "url": url, "json": body, "headers": headers})
    return {"success": response["status_code"] < 400}  # complete_session


def _new_session(setup: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    project = arguments.get("project_id") or setup.get("project_id")
    if not isinstance(project, str) or not project:
        raise errors.permanent(
            "browserbase's create_session needs a project id (`project_id`)", "BadToolCall"
        )
    settings = arguments.get("browser_settings") or {}
    if not isinstance(settings, dict):
        raise errors.permanent("browserbase's `browser_settings` must be a mapping", "BadToolCall")
    body: dict[str, Any] = {"projectId": project, "browserSettings": settings}
    if arguments.get("extension_id"):
        body["extensionId"] = str(arguments["extension_id"])
    for name, key in (("timeout", "timeout"), ("keep_alive", "keepAlive"), ("proxies", "proxies")):
        if name in arguments:
            body[key] = arguments[name]
    return body


def _session_id(arguments: dict[str, Any]) -> str:
    session = arguments.get("id")
    if not isinstance(session, str) or not SESSION_ID.fullmatch(session):
        raise errors.permanent("browserbase's `id` must be a session id", "BadToolCall")
    return session


def _session(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict) or not isinstance(value.get("id"), str):
        raise errors.permanent("Browserbase answered no session", "BadAnswer")
    return value


def _fields(session: dict[str, Any]) -> dict[str, Any]:
    return {name: session.get(name) for name in SESSION_FIELDS}


async def _install_extension(
    service: Any, headers: dict[str, str], arguments: dict[str, Any]
) -> dict[str, Any]:
    repository, ref = arguments.get("repository_name"), arguments.get("ref")
    if not isinstance(repository, str) or not REPOSITORY.fullmatch(repository) or ".." in repository:
        raise errors.permanent(
            "browserbase's `repository_name` must be a GitHub repository, owner/name", "BadToolCall"
        )
    if not isinstance(ref, str) or not REF.fullmatch(ref) or ".." in ref:
        raise errors.permanent("browserbase's `ref` must be a tag of that repository", "BadToolCall")
    archive = await service.download(f"{GITHUB}/{repository}/archive/refs/tags/{ref}.zip")
    # httpx writes the multipart body; api_call's client then sends it as it is.
    form = httpx.Request("POST", "http://multipart.invalid/", files={"file": (f"{ref}.zip", archive)})
    request = {
        "method": "POST",
        "url": join(service.base_url, "/v1/extensions"),
        "content": form.read(),
        "headers": {**headers, "Content-Type": form.headers["Content-Type"]},
    }
    extension = answer_json("Browserbase", await service.fetch(request))
    if not isinstance(extension, dict) or not isinstance(extension.get("id"), str):
        raise errors.permanent("Browserbase answered no extension id", "BadAnswer")
    return {"id": extension["id"]}
