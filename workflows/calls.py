"""How steps that call out are shaped: their activity timeout and retry policy, and api_call requests."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from temporalio.common import RetryPolicy

from workflows import language as lang
from workflows.expressions import ExpressionError
from workflows.values import ValueEvaluator

# Built-in defaults; a task's `defaults` and a step's own `timeout`/`retry` override them, field by field.
DEFAULT_TIMEOUT_SECONDS = 60.0
DEFAULT_RETRY = lang.RetrySpec(max_attempts=5, initial_interval=1.0, backoff=2.0, max_interval=60.0)
# Activities heartbeat every 2 s: a worker that dies mid-call is noticed after this long, and the call retried.
HEARTBEAT_TIMEOUT = timedelta(seconds=10)
WHOLE_TEMPLATE = re.compile(r"^\{\{((?:(?!\}\}|\{\{).)*)\}\}$", re.DOTALL)


def call_options(
    step: lang._CallStep, defaults: lang.StepDefaults | None, floor_seconds: float = 0
) -> tuple[timedelta, RetryPolicy]:
    """The start-to-close timeout of one attempt and the retry policy for `step`.

    Which errors are permanent is decided where they happen (activities/errors.py); a permanent error is
    never retried, whatever the policy says."""
    timeout = step.timeout or (defaults.timeout if defaults else None)
    if timeout is None:
        timeout = max(DEFAULT_TIMEOUT_SECONDS, floor_seconds + 5)
    merged: dict[str, Any] = DEFAULT_RETRY.model_dump()
    for layer in (defaults.retry if defaults else None, step.retry):
        if layer is not None:
            merged.update(layer.model_dump(exclude_none=True))
    policy = RetryPolicy(
        maximum_attempts=merged["max_attempts"],
        initial_interval=timedelta(seconds=merged["initial_interval"]),
        backoff_coefficient=merged["backoff"],
        maximum_interval=timedelta(seconds=merged["max_interval"]),
        non_retryable_error_types=merged.get("non_retryable") or None,
    )
    return timedelta(seconds=timeout), policy


def api_request(spec: dict[str, Any], arguments: dict[str, Any], values: ValueEvaluator) -> dict[str, Any]:
    """The HTTP request for an api_call tool: the spec's strings are templates over `arguments`, and
    the step's arguments (url, method, headers, params, json, content, data) override or extend the spec."""
    scope = {"arguments": arguments, "_": arguments}
    request = {key: _render(value, scope, values) for key, value in spec.items() if value is not None}
    for key in ("method", "url", "content", "timeout", "follow_redirects"):
        if key in arguments:
            request[key] = arguments[key]
    for key in ("headers", "params", "json", "data"):
        if isinstance(arguments.get(key), dict) and isinstance(request.get(key), dict):
            request[key] = {**request[key], **arguments[key]}
        elif key in arguments:
            request[key] = arguments[key]
    for key in ("schema", "params_schema"):
        request.pop(key, None)
    return request


def _render(value: Any, scope: dict[str, Any], values: ValueEvaluator) -> Any:
    if isinstance(value, str):
        whole = WHOLE_TEMPLATE.match(value)
        if whole:  # "{{ arguments.n }}" alone keeps its value's type (a number stays a number in JSON)
            try:
                return values.expression(whole.group(1).strip(), scope)
            except ExpressionError:
                pass  # Jinja-only syntax (filters): render as text
        return values.template(value, scope)
    if isinstance(value, dict):
        return {k: _render(v, scope, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_render(v, scope, values) for v in value]
    return value
