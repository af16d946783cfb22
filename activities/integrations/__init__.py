"""Integration tools (Julep's `type: integration`): one activity, call_integration, runs a provider's method.

Each provider is a module here with `DEFAULT_BASE_URL` and `call(service, method, setup, arguments)`; what a
task may write for it (methods, arguments, setup fields) is declared in workflows/integrations.py, checked
when the task is created. A provider's HTTP requests go through api_call's client (activities/http.py): the
same egress check, pinned address, redirect rules, size cap and deadline; `remote_browser`'s websocket
keeps to the same egress check and pinned address. Secrets in `setup` are filled in here and masked, with
every credential field written in the task, in all the call returns or raises.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from temporalio import activity

from activities.egress import EgressPolicy
from activities.heartbeat import heartbeating
from activities.http import HttpActivities
from activities.integrations import (
    algolia,
    arxiv,
    brave,
    browserbase,
    cloudinary,
    dummy,
    email,
    ffmpeg,
    google_sheets,
    llama_parse,
    mailgun,
    remote_browser,
    spider,
    unstructured,
    weather,
    wikipedia,
)
from activities.secrets import reveal
from contracts.calls import CallAnswer, IntegrationCallRequest
from contracts.temporal import CALL_INTEGRATION
from infra.temporal import errors
from workflows.calls import DEADLINE_SLACK_SECONDS
from workflows.integrations import PROVIDERS
from workflows.secret_refs import MARK

# provider name -> its module (DEFAULT_BASE_URL, call)
MODULES: dict[str, ModuleType] = {
    m.__name__.rsplit(".", 1)[-1]: m
    for m in (
        weather,
        brave,
        wikipedia,
        spider,
        email,
        arxiv,
        mailgun,
        algolia,
        unstructured,
        ffmpeg,
        dummy,
        llama_parse,
        cloudinary,
        google_sheets,
        browserbase,
        remote_browser,
    )
}


@dataclass(frozen=True)
class Service:
    """What a provider's `call` may use: where its service is, an HTTP client that keeps to api_call's
    rules, the egress policy (for what is not HTTP) and the call's deadline and idempotency key."""

    base_url: str
    fetch: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
    egress: EgressPolicy
    deadline: float
    key: str
    smtp: tuple[str | None, int | None] = (None, None)  # MINT_SMTP_HOST, MINT_SMTP_PORT
    # A file's bytes (GET, as fetch: egress check, pinned address, size cap; no redirect followed): fetch
    # answers text, and a downloaded image or video is bytes.
    download: Callable[[str], Awaitable[bytes]] | None = None


class IntegrationActivities:
    def __init__(
        self,
        http: HttpActivities,
        base_urls: dict[str, str] | None = None,
        smtp: tuple[str | None, int | None] = (None, None),
    ):
        self.http = http
        self.base_urls = base_urls or {}  # provider -> base URL (MINT_<PROVIDER>_BASE_URL)
        self.smtp = smtp

    @activity.defn(name=CALL_INTEGRATION)
    async def call_integration(self, request: IntegrationCallRequest) -> CallAnswer:
        """The provider's answer, in Julep's shape; the service's error answers are not retried, its
        5xx, 429 and timeouts are."""
        module = MODULES.get(request.provider)
        if module is None:
            raise errors.permanent(f"provider {request.provider!r} is not available", "BadToolCall")
        async with heartbeating():
            raw = {"setup": request.setup, "arguments": request.arguments, "secrets": request.secrets}
            filled, redactor = await reveal(self.http.secrets, raw, also=_written_credentials(request))
            deadline = _deadline(request.timeout)
            service = Service(
                base_url=self.base_urls.get(request.provider) or module.DEFAULT_BASE_URL,
                fetch=lambda spec: self.http.fetch(_with_key(spec, request.key, deadline)),
                egress=self.http.egress,
                deadline=deadline,
                key=request.key,
                smtp=self.smtp,
                download=lambda url: self._download(url, request.key, deadline),
            )
            try:
                result = await _within(
                    deadline, module.call(service, request.method, filled["setup"], filled["arguments"])
                )
            except Exception as exc:
                raise redactor.error(exc) from None
            return CallAnswer(response=redactor.value(result), attempt=activity.info().attempt)

    async def _download(self, url: str, key: str, deadline: float) -> bytes:
        """The file's bytes, with api_call's rules (HttpActivities.download)."""
        return await self.http.download(url, _with_key({}, key, deadline), deadline)


def _with_key(spec: dict[str, Any], key: str, deadline: float) -> dict[str, Any]:
    """The request with the call's deadline and, as api_call sends, an Idempotency-Key that is the same on
    every attempt (a service that honours it drops the repeats)."""
    return {**spec, "timeout": deadline, "headers": {"Idempotency-Key": key, **(spec.get("headers") or {})}}


# A credential written in a task shorter than this is not masked: masking `k` everywhere would garble the
# answer, and so short a value is no secret anyway.
LEAST_MASKED = 6


def _written_credentials(request: IntegrationCallRequest) -> dict[str, str]:
    """Credentials the task wrote as they are (`brave_api_key: abc123...`): masked like secrets (the field's
    name stands for them). References to secrets are masked by `reveal` itself."""
    provider = PROVIDERS[request.provider]
    return {
        name: value
        for name in provider.credentials
        if isinstance(value := request.setup.get(name), str)
        and len(value) >= LEAST_MASKED
        and MARK not in value
    }


def _deadline(timeout: float) -> float:
    """The call's deadline: its own, or a little less than the attempt's (the step's `timeout`) when that is
    shorter, so that the call's own, clearer error wins the race."""
    attempt = activity.info().start_to_close_timeout
    if attempt is None:
        return timeout
    seconds = attempt.total_seconds()
    return min(timeout, seconds - min(DEADLINE_SLACK_SECONDS, seconds / 5))


async def _within(deadline: float, call: Awaitable[Any]) -> Any:
    timer = asyncio.timeout(deadline)
    try:
        async with timer:
            return await call
    except TimeoutError:
        if not timer.expired():
            raise
        raise errors.transient(
            f"the call did not finish within its timeout of {deadline:g} seconds", "IntegrationTimeout"
        ) from None
