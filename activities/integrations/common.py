"""What the providers share: joining a base URL and a path, and the error a service's own answer means."""

from __future__ import annotations

from typing import Any, TypedDict

from temporalio.exceptions import ApplicationError

from infra.temporal import errors


def join(base_url: str, path: str) -> str:
    """`path` under `base_url` (an operator's proxy may add a prefix: `http://proxy/weather`)."""
    return base_url.rstrip("/") + "/" + path.lstrip("/")


def answer_json(service: str, response: dict[str, Any]) -> Any:
    """The JSON of a 2xx answer; a 4xx (the service refusing the call: a bad key, an unknown place) is a
    permanent error quoting the service's own message. (5xx and 429 were already raised, to retry.)"""
    status = response["status_code"]
    if status >= 400:
        raise refused(service, status, response)
    if response["json"] is None:
        raise errors.permanent(f"{service} answered something other than JSON (status {status})", "BadAnswer")
    return response["json"]


def refused(service: str, status: int, response: dict[str, Any]) -> ApplicationError:
    body = response.get("json")
    message = None
    if isinstance(body, dict):
        for key in ("message", "error", "detail", "title"):
            value = body.get(key)
            if isinstance(value, dict):
                value = value.get("detail") or value.get("message")
            if isinstance(value, str) and value:
                message = value
                break
    text = message or (response.get("content") or "").strip()[:300] or "no message"
    return errors.permanent(f"{service} refused the call ({status}): {text}", "IntegrationRefused")


class BrowserAnswer(TypedDict):
    """Julep's answer to remote_browser's perform_action."""

    output: str | None
    error: str | None
    base64_image: str | None
    system: str | None
