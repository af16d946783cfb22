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
from collections.abc import Awaitable, Callable

import httpx

from activities.integrations.common import Service, answer_json, join
from contracts.calls import ApiCallRequest
from contracts.json import JsonObject, JsonValue
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


class Api:
    """Browserbase's API as one call sees it: its address, the key's header, the setup and the arguments."""

    def __init__(self, service: Service, setup: JsonObject, arguments: JsonObject):
        self.service = service
        self.setup = setup
        self.arguments = arguments
        self.headers = {"X-BB-API-Key": str(setup["api_key"])}
        self.sessions = join(service.base_url, "/v1/sessions")

    async def send(self, request: ApiCallRequest) -> JsonValue:
        return answer_json("Browserbase", await self.service.fetch({**request, "headers": self.headers}))


async def call(service: Service, method: str, setup: JsonObject, arguments: JsonObject) -> JsonObject:
    return await METHODS[method](Api(service, setup, arguments))


async def _list_sessions(api: Api) -> JsonObject:
    status = api.arguments.get("status")
    if status is not None and status not in STATUSES:
        raise errors.permanent(f"browserbase's `status` must be one of {', '.join(STATUSES)}", "BadToolCall")
    params = {"status": str(status)} if status else None
    found = await api.send({"method": "GET", "url": api.sessions, "params": params})
    return {"sessions": found if isinstance(found, list) else []}


async def _create_session(api: Api) -> JsonObject:
    body = _new_session(api.setup, api.arguments)
    session = _session(await api.send({"method": "POST", "url": api.sessions, "json": body}))
    return {"id": session.get("id"), "connect_url": session.get("connectUrl"), **_fields(session)}


async def _get_session(api: Api) -> JsonObject:
    url = f"{api.sessions}/{_session_id(api.arguments)}"
    session = _session(await api.send({"method": "GET", "url": url}))
    return {"id": session.get("id"), **_fields(session)}


async def _get_live_urls(api: Api) -> JsonObject:
    url = f"{api.sessions}/{_session_id(api.arguments)}/debug"
    return {"urls": await api.send({"method": "GET", "url": url})}


async def _complete_session(api: Api) -> JsonObject:
    url = f"{api.sessions}/{_session_id(api.arguments)}"
    body = {"projectId": api.setup.get("project_id"), "status": "REQUEST_RELEASE"}
    response = await api.service.fetch({"method": "POST", "url": url, "json": body, "headers": api.headers})
    return {"success": response["status_code"] < 400}  # false when Browserbase refuses, as in Julep


def _new_session(setup: JsonObject, arguments: JsonObject) -> JsonObject:
    project = arguments.get("project_id") or setup.get("project_id")
    if not isinstance(project, str) or not project:
        raise errors.permanent(
            "browserbase's create_session needs a project id (`project_id`)", "BadToolCall"
        )
    settings = arguments.get("browser_settings") or {}
    if not isinstance(settings, dict):
        raise errors.permanent("browserbase's `browser_settings` must be a mapping", "BadToolCall")
    body: JsonObject = {"projectId": project, "browserSettings": settings}
    if arguments.get("extension_id"):
        body["extensionId"] = str(arguments["extension_id"])
    for name, key in (("timeout", "timeout"), ("keep_alive", "keepAlive"), ("proxies", "proxies")):
        if name in arguments:
            body[key] = arguments[name]
    return body


def _session_id(arguments: JsonObject) -> str:
    session = arguments.get("id")
    if not isinstance(session, str) or not SESSION_ID.fullmatch(session):
        raise errors.permanent("browserbase's `id` must be a session id", "BadToolCall")
    return session


def _session(value: JsonValue) -> JsonObject:
    if not isinstance(value, dict) or not isinstance(value.get("id"), str):
        raise errors.permanent("Browserbase answered no session", "BadAnswer")
    return value


def _fields(session: JsonObject) -> JsonObject:
    return {name: session.get(name) for name in SESSION_FIELDS}


async def _install_extension_from_github(api: Api) -> JsonObject:
    repository, ref = api.arguments.get("repository_name"), api.arguments.get("ref")
    if not isinstance(repository, str) or not REPOSITORY.fullmatch(repository) or ".." in repository:
        raise errors.permanent(
            "browserbase's `repository_name` must be a GitHub repository, owner/name", "BadToolCall"
        )
    if not isinstance(ref, str) or not REF.fullmatch(ref) or ".." in ref:
        raise errors.permanent("browserbase's `ref` must be a tag of that repository", "BadToolCall")
    archive = await api.service.download(f"{GITHUB}/{repository}/archive/refs/tags/{ref}.zip")
    # httpx writes the multipart body; api_call's client then sends it as it is.
    form = httpx.Request("POST", "http://multipart.invalid/", files={"file": (f"{ref}.zip", archive)})
    request: ApiCallRequest = {
        "method": "POST",
        "url": join(api.service.base_url, "/v1/extensions"),
        "content": form.read(),
        "headers": {**api.headers, "Content-Type": form.headers["Content-Type"]},
    }
    extension = answer_json("Browserbase", await api.service.fetch(request))
    if not isinstance(extension, dict) or not isinstance(extension.get("id"), str):
        raise errors.permanent("Browserbase answered no extension id", "BadAnswer")
    return {"id": extension["id"]}


# Each method Julep declares, and what answers it.
METHODS: dict[str, Callable[[Api], Awaitable[JsonObject]]] = {
    "list_sessions": _list_sessions,
    "create_session": _create_session,
    "get_session": _get_session,
    "complete_session": _complete_session,
    "get_live_urls": _get_live_urls,
    "install_extension_from_github": _install_extension_from_github,
}
