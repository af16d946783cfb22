"""What the providers share: what a provider is (`Provider`, the contract each module in this folder keeps),
the `Service` its call is given, joining a base URL and a path, and the error a service's own answer means."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Protocol, TypedDict, runtime_checkable

from temporalio.exceptions import ApplicationError

from activities.egress import EgressPolicy
from activities.http import HttpResponse
from contracts.calls import ApiCallRequest
from contracts.json import JsonObject, JsonValue
from infra.temporal import errors


async def _no_download(url: str) -> bytes:
    raise errors.permanent("this call cannot download files", "BadToolCall")


@dataclass(frozen=True)
class Service:
    """What a provider's `call` may use: where its service is, an HTTP client that keeps to api_call's
    rules, the egress policy (for what is not HTTP) and the call's deadline and idempotency key."""

    base_url: str
    fetch: Callable[[ApiCallRequest], Awaitable[HttpResponse]]
    egress: EgressPolicy
    deadline: float
    key: str
    smtp: tuple[str | None, int | None] = (None, None)  # MINT_SMTP_HOST, MINT_SMTP_PORT
    # A file's bytes (GET, as fetch: egress check, pinned address, size cap; no redirect followed): fetch
    # answers text, and a downloaded image or video is bytes.
    download: Callable[[str], Awaitable[bytes]] = _no_download


@runtime_checkable
class Provider(Protocol):
    """A provider's module (one for each provider workflows/integrations.py declares, named as it is):
    where its service is unless the operator says otherwise, the methods it implements (the declared ones),
    and the call of one of them. `setup` and `arguments` are the task's (checked against the declaration
    when the task was created, secrets filled in); the answer is the JSON object Julep answers."""

    DEFAULT_BASE_URL: str
    METHODS: Collection[str]

    async def call(
        self, service: Service, method: str, setup: JsonObject, arguments: JsonObject
    ) -> Mapping[str, object]: ...


def join(base_url: str, path: str) -> str:
    """`path` under `base_url` (an operator's proxy may add a prefix: `http://proxy/weather`)."""
    return base_url.rstrip("/") + "/" + path.lstrip("/")


def answer_json(service: str, response: HttpResponse) -> JsonValue:
    """The JSON of a 2xx answer; a 4xx (the service refusing the call: a bad key, an unknown place) is a
    permanent error quoting the service's own message. (5xx and 429 were already raised, to retry.)"""
    status = response["status_code"]
    if status >= 400:
        raise refused(service, status, response)
    if response["json"] is None:
        raise errors.permanent(f"{service} answered something other than JSON (status {status})", "BadAnswer")
    return response["json"]


def answer_object(service: str, response: HttpResponse) -> JsonObject:
    """The JSON object of a 2xx answer (an empty one when the service answered other JSON)."""
    data = answer_json(service, response)
    return data if isinstance(data, dict) else {}


def object_in(value: JsonValue) -> JsonObject:
    """`value` when it is a JSON object, else an empty one (a service's answer, read leniently)."""
    return value if isinstance(value, dict) else {}


def objects_in(value: JsonValue) -> list[JsonObject]:
    """The JSON objects of `value` when it is a list, else none."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def whole_number(value: JsonValue) -> int:
    """`int(value)` for what JSON holds: raises TypeError or ValueError as int() does."""
    if isinstance(value, int | float | str):
        return int(value)
    raise TypeError(f"not a number: {type(value).__name__}")


def refused(service: str, status: int, response: HttpResponse) -> ApplicationError:
    return refused_with(service, status, response["json"], response["content"])


def refused_with(service: str, status: int, body: JsonValue, content: str) -> ApplicationError:
    """The error for a service's refusal: the message its JSON body gives, else the start of its text."""
    message = None
    if isinstance(body, dict):
        for key in ("message", "error", "detail", "title"):
            value = body.get(key)
            if isinstance(value, dict):
                value = value.get("detail") or value.get("message")
            if isinstance(value, str) and value:
                message = value
                break
    text = message or content.strip()[:300] or "no message"
    return errors.permanent(f"{service} refused the call ({status}): {text}", "IntegrationRefused")


class BrowserAnswer(TypedDict):
    """Julep's answer to remote_browser's perform_action."""

    output: str | None
    error: str | None
    base64_image: str | None
    system: str | None
