"""What the worker says about each activity it runs (an interceptor, so no activity has to remember it).

- A failure Mint expected (an ApplicationError raised on purpose through infra/temporal/errors.py, which marks
  it BENIGN: a model not configured, a URL the egress policy refuses, a server that answered 503) is one log
  line naming the execution, the call and the reason. The SDK logs a BENIGN failure only at DEBUG, and
  leaves it out of its failure metrics. So is an attempt that timed out (a `StepTimeout`: Temporal has failed
  it already, and the cancelled call's traceback would say nothing). Any other exception is the SDK's to log,
  with its traceback, once.
- Each call a step makes (model, api_call, system, MCP, search) is counted, by target and outcome, and
  timed; a model call's tokens are counted too (infra/telemetry/metrics.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, TypeGuard
from urllib.parse import urlsplit

from temporalio import activity
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
)

from contracts.calls import WorkerCall
from contracts.temporal import CALL_API, CALL_INTEGRATION, CALL_MCP, CALL_MODEL, CALL_SYSTEM, SEARCH_DOCS
from infra.telemetry.logs import execution_of
from infra.telemetry.metrics import Metrics
from infra.temporal import errors

log = logging.getLogger("mint.activities")

# The calls steps make, as the metrics name their kind.
CALL_KINDS = {
    CALL_MODEL: "model",
    CALL_API: "api_call",
    CALL_SYSTEM: "system",
    CALL_MCP: "mcp",
    CALL_INTEGRATION: "integration",
    SEARCH_DOCS: "search",
}


class ActivityObserver(Interceptor):
    """The worker's interceptor: logs expected failures in one line and records the calls' metrics."""

    def __init__(self, metrics: Metrics | None = None):
        self.metrics = metrics

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Observed(next, self.metrics)


class _Observed(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, metrics: Metrics | None):
        super().__init__(next)
        self.metrics = metrics

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        name, request = _call_of(activity.info().activity_type, input.args)
        developer = call_developer(input.args[0] if input.args else None, request)
        started = time.monotonic()
        try:
            result = await self.next.execute_activity(input)
        except BaseException as exc:
            if _timed_out(exc):
                # Temporal has already failed the attempt as timed out (what the step reports); what the
                # activity raises now is dropped, so one line says it instead of the SDK's traceback.
                exc = errors.transient(_timeout_text(), "StepTimeout")
            self._record(name, request, developer, started, _outcome(exc), None)
            if is_expected(exc):
                _log_expected(name, exc)
                if exc.type == "StepTimeout":
                    raise exc from None
            raise
        self._record(name, request, developer, started, "ok", result)
        return result

    def _record(
        self, name: str, request: Any, developer: str, started: float, outcome: str, result: Any
    ) -> None:
        kind = CALL_KINDS.get(name)
        if self.metrics is None or kind is None:
            return
        target = call_target(name, request)
        self.metrics.record_call(kind, target, time.monotonic() - started, outcome, developer)
        usage = _field(result, "usage")
        if name == CALL_MODEL and isinstance(usage, dict):
            prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
            self.metrics.record_tokens(target, int(prompt or 0), int(completion or 0), developer)


def is_expected(exc: BaseException) -> TypeGuard[ApplicationError]:
    """An error Mint raised on purpose, whose message says all there is to say (no traceback needed)."""
    return isinstance(exc, ApplicationError) and exc.category == ApplicationErrorCategory.BENIGN


def _timed_out(exc: BaseException) -> bool:
    """Whether the activity was cancelled because its attempt timed out: the worker says so (a call in the
    worker), or Temporal no longer knows the attempt (a queued call, whose timeout Temporal's server
    enforces)."""
    if not isinstance(exc, asyncio.CancelledError):
        return False
    details = activity.cancellation_details()
    return details is not None and (details.timed_out or details.not_found)


def _timeout_text() -> str:
    limit = activity.info().start_to_close_timeout
    return f"timed out after {limit.total_seconds():g} s" if limit else "timed out"


def _log_expected(name: str, exc: ApplicationError) -> None:
    info = activity.info()
    execution = execution_of(info.workflow_type, info.workflow_id)
    whose = f"execution {execution}" if execution else f"workflow {info.workflow_id}"
    if exc.non_retryable:
        log.info("%s failed (%s, not retried): %s: %s", name, whose, exc.type, exc.message)
    else:
        log.warning(
            "%s failed (%s, attempt %d, retryable): %s: %s", name, whose, info.attempt, exc.type, exc.message
        )


def _outcome(exc: BaseException) -> str:
    """A failed call's outcome label: the type Mint gave the error, else the exception's class."""
    if isinstance(exc, ApplicationError) and exc.type:
        return exc.type
    return "cancelled" if isinstance(exc, asyncio.CancelledError) else type(exc).__name__


def _call_of(activity_type: str, args: Any) -> tuple[str, Any]:
    """The call an activity makes and its request: a call run in the worker names the one it runs."""
    request = args[0] if args else None
    if isinstance(request, WorkerCall):
        return request.activity, request.request
    return activity_type, request


def call_developer(outer: Any, request: Any) -> str:
    """Whose call this is, for the label budget its target counts against: the developer the call (or the
    worker call around it) names, else the workflow's fairness key (the developer, inherited from its start:
    contracts.temporal.tenant_priority), else "" (one budget shared by calls that name no one)."""
    for holder in (outer, request, _field(request, "owner"), _field(request, "secrets")):
        developer = _field(holder, "developer_id")
        if isinstance(developer, str) and developer:
            return developer
    priority = activity.info().priority
    return (priority.fairness_key if priority is not None else None) or ""


def call_target(name: str, request: Any) -> str:
    """What a call reaches, for its metrics: the model, the api_call's host, the system operation, the MCP
    tool, the search's mode."""
    if name == CALL_MODEL:
        return str(_field(request, "model") or "default")
    if name == CALL_API:
        try:
            return urlsplit(str(_field(request, "url") or "")).hostname or "unknown"
        except ValueError:
            return "unknown"
    if name == CALL_SYSTEM:
        spec = _field(request, "system")
        if not isinstance(spec, dict):
            return "unknown"
        return ".".join(str(spec[k]) for k in ("resource", "subresource", "operation") if spec.get(k))
    if name == CALL_MCP:
        return str(_field(request, "tool") or "unknown")
    if name == CALL_INTEGRATION:
        return f"{_field(request, 'provider')}.{_field(request, 'method')}"
    return str(_field(request, "mode") or "unknown")


def _field(value: Any, name: str) -> Any:
    """A request's or answer's field, whether it came as its dataclass or (through the worker) as JSON."""
    if isinstance(value, dict):
        return value.get(name)
    return getattr(value, name, None)
