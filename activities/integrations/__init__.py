"""Integration tools (Julep's `type: integration`): one activity, call_integration, runs a provider's method.

The providers are declared in workflows/integrations.py (what a task may write for each: methods, arguments,
setup fields, checked when the task is created), and each is implemented by the module of its name here,
which keeps the Provider contract (activities/integrations/common.py); tests/test_declarations.py holds the
two to each other. A provider's HTTP requests go through api_call's client (activities/http.py): the
same egress check, pinned address, redirect rules, size cap and deadline; `remote_browser`'s websocket
keeps to the same egress check and pinned address. Secrets in `setup` are filled in here and masked, with
every credential field written in the task, in all the call returns or raises.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Awaitable, Mapping
from typing import TypeVar

from temporalio import activity

from activities.heartbeat import heartbeating
from activities.http import HttpActivities
from activities.integrations.common import Provider, Service
from activities.secrets import reveal
from contracts.calls import ApiCallRequest, CallAnswer, IntegrationCallRequest
from contracts.temporal import CALL_INTEGRATION
from infra.temporal import errors
from workflows.calls import DEADLINE_SLACK_SECONDS
from workflows.integrations import PROVIDERS
from workflows.secret_refs import MARK

__all__ = ["MODULES", "IntegrationActivities", "Service"]

T = TypeVar("T")


def _module(provider: str) -> Provider:
    """The module of this name here, which must keep the Provider contract (activities/integrations/common.py)."""
    module = importlib.import_module(f"{__name__}.{provider}")
    if not isinstance(module, Provider):
        raise TypeError(
            f"{module.__name__} is not an integration provider: it needs DEFAULT_BASE_URL, METHODS, call"
        )
    return module


# provider name -> its module: one for each provider workflows/integrations.py declares.
MODULES: Mapping[str, Provider] = {name: _module(name) for name in PROVIDERS}


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
        if request.method not in module.METHODS and not PROVIDERS[request.provider].open:
            raise errors.permanent(
                f"provider {request.provider!r} has no method {request.method!r}", "BadToolCall"
            )
        async with heartbeating():
            written = _written_credentials(request)
            given = [request.setup, request.arguments]
            (setup, arguments), redactor = await reveal(self.http.secrets, given, request.secrets, written)
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
                result = await _within(deadline, module.call(service, request.method, setup, arguments))
            except Exception as exc:
                raise redactor.error(exc) from None
            return CallAnswer(response=redactor.value(result), attempt=activity.info().attempt)

    async def _download(self, url: str, key: str, deadline: float) -> bytes:
        """The file's bytes, with api_call's rules (HttpActivities.download)."""
        return await self.http.download(url, _with_key({}, key, deadline), deadline)


def _with_key(spec: ApiCallRequest, key: str, deadline: float) -> ApiCallRequest:
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


async def _within(deadline: float, call: Awaitable[T]) -> T:
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
