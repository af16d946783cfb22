"""How steps that call out are shaped: their activity timeout and retry policy, api_call requests, and what a
call gives back (CallResult)."""

from __future__ import annotations

import re
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar, assert_never, final

from temporalio.common import RetryPolicy

from contracts.calls import (
    ApiCallRequest,
    IntegrationCallRequest,
    McpCallRequest,
    ModelRequest,
    Owner,
    SearchRequest,
    SecretScope,
    SystemCallRequest,
)
from contracts.executions import DEFAULT_MAX_TOOL_TIMEOUT_SECONDS
from contracts.json import JsonObject, JsonValue
from contracts.temporal import CALL_API, CALL_INTEGRATION, CALL_MCP, CALL_SYSTEM
from expressions.parsing import ExpressionError
from workflows import language as lang
from workflows.failures import TIMEOUT_TYPES
from workflows.integrations import (
    REFUSED,
    Provider,
    argument_problems,
    integration_problems,
    provider_of,
)
from workflows.secret_refs import SecretRefs
from workflows.tool_kinds import (
    ApiCallTool,
    BuiltinTool,
    FunctionTool,
    IntegrationTool,
    McpServerTool,
    SystemTool,
    Tool,
)
from workflows.values import Names, ValueEvaluator

# Built-in defaults; a task's `defaults` and a step's own `timeout`/`retry` override them, field by field.
DEFAULT_TIMEOUT_SECONDS = 60.0
# An api_call's `timeout` is the deadline of the whole call (every redirect hop, the whole body); it may not
# exceed MINT_MAX_TOOL_TIMEOUT_SECONDS (DEFAULT_MAX_TOOL_TIMEOUT_SECONDS unless set). The attempt's
# start-to-close timeout is that deadline plus a little, so that the call's own, clearer error wins the race.
DEADLINE_SLACK_SECONDS = 5.0
# A call may first wait for one of its developer's places in the worker (activities/tenant_limits.py): the
# attempt allows this much more, so that a call that waited is not cut off for it (its own deadline starts
# when it runs). Only a timeout changes, not which commands the workflow emits, so histories still replay.
PLACE_WAIT_SECONDS = 30.0
DEFAULT_RETRY = lang.RetrySpec(max_attempts=5, initial_interval=1.0, backoff=2.0, max_interval=60.0)
# Call activities heartbeat while they run: a worker that dies mid-call is noticed after HEARTBEAT_TIMEOUT,
# and the call retried (contracts/liveness.py).
# A call whose timeout is at most this runs in the worker that runs its workflow (a Temporal local activity):
# one round trip, its transitions written alongside it. A longer call goes through Temporal's task queue as a
# regular activity: any worker may take it, a lost worker is noticed by its heartbeat within
# HEARTBEAT_TIMEOUT, and the workflow sees signals (input for another branch, a cancel) while it runs; a call
# in the worker delays them until the worker's next workflow task heartbeat (a few seconds). A step's (or the
# task's `defaults`') `local: true` or `local: false` decides instead.
LOCAL_CALL_MAX_SECONDS = DEFAULT_TIMEOUT_SECONDS
# Executions that started before calls could run in the worker keep the activities their histories hold.
CALLS_IN_WORKER_PATCH = "calls-run-in-the-worker"
# Executions whose histories were recorded before the integration providers existed failed such a tool call
# at once; they still do when replayed.
INTEGRATIONS_PATCH = "integration-providers"
T = TypeVar("T")
WHOLE_TEMPLATE = re.compile(r"^\{\{((?:(?!\}\}|\{\{).)*)\}\}$", re.DOTALL)


def call_options(
    step: lang.CallStep, defaults: lang.StepDefaults | None, deadline: float | None = None
) -> tuple[timedelta, RetryPolicy]:
    """The start-to-close timeout of one attempt and the retry policy for `step`; `deadline` is the call's
    own bounded timeout, when it has one (api_call), which the attempt follows.

    Which errors are permanent is decided where they happen (infra/temporal/errors.py); a permanent error is
    never retried, whatever the policy says."""
    timeout = step.timeout or (defaults.timeout if defaults else None)
    if deadline is not None:
        attempt = deadline + DEADLINE_SLACK_SECONDS + PLACE_WAIT_SECONDS
        timeout = attempt if timeout is None else min(timeout, attempt)
    elif timeout is None:
        timeout = DEFAULT_TIMEOUT_SECONDS
    # Field by field, the most specific layer that sets it: the step's, the task's defaults', Mint's.
    layers = [r for r in (step.retry, defaults.retry if defaults else None, DEFAULT_RETRY) if r is not None]
    policy = RetryPolicy(
        maximum_attempts=_first(r.max_attempts for r in layers),
        initial_interval=timedelta(seconds=_first(r.initial_interval for r in layers)),
        backoff_coefficient=_first(r.backoff for r in layers),
        maximum_interval=timedelta(seconds=_first(r.max_interval for r in layers)),
        non_retryable_error_types=_non_retryable(
            next((r.non_retryable for r in layers if r.non_retryable is not None), None)
        ),
    )
    return timedelta(seconds=timeout), policy


def _first(values: Iterable[T | None]) -> T:
    """The first value set (DEFAULT_RETRY sets every field it is asked for)."""
    return next(v for v in values if v is not None)


def _non_retryable(names: list[str] | None) -> list[str] | None:
    """A step's `non_retryable` as Temporal reads it: `StepTimeout` is Temporal's names for an attempt's
    timeouts."""
    if not names:
        return None
    return [t for name in names for t in (TIMEOUT_TYPES if name == "StepTimeout" else (name,))]


def runs_in_worker(
    step: lang.CallStep, defaults: lang.StepDefaults | None, timeout: float, queue: str | None = None
) -> bool:
    """Whether a call that may last `timeout` seconds (its own deadline, not its attempt's slack) runs in
    the worker (see LOCAL_CALL_MAX_SECONDS). A call whose kind has a task queue of its own (`queue`, from
    ExecutionParams.queues) never does: it runs where the operator scaled workers for it."""
    if queue is not None:
        return False
    for choice in (step.local, defaults.local if defaults else None):
        if choice is not None:
            return choice
    return timeout <= LOCAL_CALL_MAX_SECONDS


def bounded_timeout(raw: Any, limit: float) -> float:
    """An api_call's `timeout` in seconds (DEFAULT_TIMEOUT_SECONDS when unset): a number more than 0 and at
    most `limit`, else ValueError saying so."""
    if raw is None:
        return min(DEFAULT_TIMEOUT_SECONDS, limit)
    try:
        if isinstance(raw, bool):
            raise ValueError
        seconds = float(raw)
    except (TypeError, ValueError):
        raise ValueError(f"timeout must be a number of seconds, not {_short(raw)}") from None
    if not 0 < seconds <= limit:  # (NaN compares false too)
        raise ValueError(
            f"timeout must be more than 0 and at most {limit:g} seconds "
            f"(MINT_MAX_TOOL_TIMEOUT_SECONDS), not {_short(raw)}"
        )
    return seconds


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


class ToolError(ValueError):
    """A tool that cannot be called as written (bad arguments, an unknown provider)."""


# The input of the activity that runs a server-side tool (call_api, call_system, call_mcp).
ToolCallRequest = ApiCallRequest | SystemCallRequest | McpCallRequest | IntegrationCallRequest
# The input of any activity a step calls (contracts.temporal.ACTIVITIES has which is whose).
CallRequest = ModelRequest | SearchRequest | ToolCallRequest


@dataclass
class ToolActivity:
    """How to run one server-side tool call: the activity, its input, and the call's own deadline (seconds),
    when it has one."""

    name: str  # CALL_API, CALL_SYSTEM, CALL_MCP or CALL_INTEGRATION
    request: ToolCallRequest
    deadline: float | None = None


def tool_activity(
    tool: Tool,
    arguments: Any,
    owner: Owner,
    values: ValueEvaluator,
    new_key: Callable[[], str],
    max_timeout: float = DEFAULT_MAX_TOOL_TIMEOUT_SECONDS,
    patched: Callable[[str], bool] = lambda _: True,
) -> ToolActivity:
    """The activity call for an api_call, system, MCP or integration tool (the client runs the others).

    `owner` is whose tools these are, and so whose secrets they may use. `new_key`
    makes the api_call's Idempotency-Key: the same on every attempt (retries reuse the activity's input), so
    the server can drop repeats. An api_call's timeout may not exceed `max_timeout` seconds. `patched` is
    the run's workflows/patches.py Patches (INTEGRATIONS_PATCH)."""
    if not isinstance(arguments, dict):
        raise ToolError(f"arguments for {tool.type} tool {tool.name!r} must be a mapping")
    match tool:
        case ApiCallTool():
            return _api_call(tool, arguments, owner, values, new_key, max_timeout)
        case SystemTool():
            return ToolActivity(CALL_SYSTEM, SystemCallRequest(owner.developer_id, tool.system, arguments))
        case McpServerTool():
            return ToolActivity(CALL_MCP, McpCallRequest(tool.integration, tool.method, arguments))
        case IntegrationTool():
            return _integration_call(tool, arguments, owner, values, new_key, max_timeout, patched)
        case FunctionTool() | BuiltinTool():
            raise ToolError(f"{tool.type} tool {tool.name!r} is run by the client, not by Mint")
        case _:
            assert_never(tool)


def _api_call(
    tool: ApiCallTool,
    arguments: JsonObject,
    owner: Owner,
    values: ValueEvaluator,
    new_key: Callable[[], str],
    max_timeout: float,
) -> ToolActivity:
    nonce = new_key()
    secrets = SecretRefs(nonce)
    request = api_request(tool.api_call, arguments, values, secrets)
    if not secrets.intact(request):
        raise ToolError(
            f"api_call tool {tool.name!r} changes a secret before using it (a filter, a slice, a "
            "function call): a secret can only be inserted as it is, e.g. `Bearer {{ secrets.KEY }}`"
        )
    if secrets.lookups:
        request["secrets"] = {"developer_id": owner.developer_id, "agent_id": owner.agent_id, "nonce": nonce}
    try:
        deadline = bounded_timeout(request.get("timeout"), max_timeout)
    except ValueError as exc:
        raise ToolError(f"api_call tool {tool.name!r}: {exc}") from None
    request["timeout"] = deadline
    headers = request.get("headers") or {}
    if not any(k.lower() == "idempotency-key" for k in headers):
        request["headers"] = {**headers, "Idempotency-Key": new_key()}
    return ToolActivity(CALL_API, request, deadline)


def _integration_call(
    tool: IntegrationTool,
    arguments: JsonObject,
    owner: Owner,
    values: ValueEvaluator,
    new_key: Callable[[], str],
    max_timeout: float,
    patched: Callable[[str], bool],
) -> ToolActivity:
    provider = provider_of(tool.integration)
    if provider is not None and patched(INTEGRATIONS_PATCH):
        deadline = min(DEFAULT_TIMEOUT_SECONDS, max_timeout)
        call = integration_request(provider, tool.integration, arguments, owner, values, new_key)
        call.timeout = deadline  # the activity also keeps within the step's own `timeout`
        return ToolActivity(CALL_INTEGRATION, call, deadline)
    # A tool stored before its provider was checked at creation (or an agent's) can still name one.
    name = tool.integration.get("provider")
    why = REFUSED.get(str(name)) or "Mint runs mcp and the providers in the README's table"
    raise ToolError(f"{tool.type} tool {tool.name!r}: provider {name!r} is not available: {why}")


def integration_request(
    provider: Provider,
    integration: JsonObject,
    arguments: JsonObject,
    owner: Owner,
    values: ValueEvaluator,
    new_key: Callable[[], str],
) -> IntegrationCallRequest:
    """The call of an integration tool: its setup with `secrets.NAME` (bare, `$ secrets.NAME` or in a
    `{{ }}` template) as references, an absent credential as a reference to the owner's secret of its
    default name, and the tool's pre-set `arguments` under the step's."""
    stored = integration_problems(integration)  # (checked at creation: this is a tool stored before that)
    if stored:
        raise ToolError("; ".join(stored))
    nonce = new_key()
    secrets = SecretRefs(nonce)
    given = integration.get("setup")
    try:
        setup = {k: _setup_value(v, secrets, values) for k, v in _object(given).items()}
    except ExpressionError as exc:
        raise ToolError(f"provider {provider.name!r}: a setup value cannot be read: {exc}") from None
    for name, secret in provider.credentials.items():
        if setup.get(name) in (None, "") and secret:
            setup[name] = secrets[secret]
    if not secrets.intact(setup):
        raise ToolError(
            f"provider {provider.name!r}: a setup value changes a secret before using it: a secret can only "
            "be inserted as it is (`secrets.KEY` or `{{ secrets.KEY }}`)"
        )
    merged = {**_object(integration.get("arguments")), **arguments}
    missing = argument_problems(integration, merged.keys())
    if missing:
        raise ToolError("; ".join(missing))
    scope_of = SecretScope(developer_id=owner.developer_id, agent_id=owner.agent_id, nonce=nonce)
    method = integration.get("method")
    return IntegrationCallRequest(
        provider.name,
        method if isinstance(method, str) and method else provider.default_method,
        setup,
        merged,
        timeout=DEFAULT_TIMEOUT_SECONDS,  # (tool_activity bounds it)
        key=new_key(),
        secrets=scope_of if secrets.lookups else None,
    )


BARE_SECRET = re.compile(r"^\s*secrets\.([A-Za-z_][A-Za-z0-9_]*)\s*$")


def _object(value: JsonValue) -> JsonObject:
    return value if isinstance(value, dict) else {}


def _setup_value(value: JsonValue, secrets: SecretRefs, values: ValueEvaluator) -> Any:
    scope = {"secrets": secrets}
    if isinstance(value, str):
        bare = BARE_SECRET.match(value)
        if bare:
            return secrets[bare.group(1)]
        if value.startswith("$"):
            return values.expression(value[1:].strip(), scope)
    return _render(value, scope, values)


def api_request(
    spec: JsonObject, arguments: JsonObject, values: ValueEvaluator, secrets: SecretRefs
) -> ApiCallRequest:
    """The HTTP request for an api_call tool: the spec's strings are templates over `arguments` and
    `secrets` (which give references, not values), and the step's arguments (url, method, headers, params,
    json, content, data) override or extend the spec."""
    scope = {"arguments": arguments, "_": arguments, "secrets": secrets}
    request = {key: _render(value, scope, values) for key, value in spec.items() if value is not None}
    for key in ("method", "url", "content", "timeout", "follow_redirects"):
        if key in arguments:
            request[key] = arguments[key]
    for key in ("headers", "params", "json", "data"):
        given, spec_value = arguments.get(key), request.get(key)
        if isinstance(given, dict) and isinstance(spec_value, dict):
            request[key] = {**spec_value, **given}
        elif key in arguments:
            request[key] = given
    for key in ("schema", "params_schema"):
        request.pop(key, None)
    # The spec's keys and the arguments' are httpx's request keys (ApiCallRequest), checked when the tool
    # was created; what reaches the activity is this dict as it is.
    return typing.cast(ApiCallRequest, request)


def _render(value: Any, scope: Names, values: ValueEvaluator) -> Any:
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


@final
@dataclass
class CallResult:
    """A call's output, how many attempts it took and, for model calls, the tokens used and their cost
    (recorded in the step transition's metadata; the writer sums usage on the execution)."""

    output: Any
    attempts: int
    usage: JsonObject | None = None  # as the provider gave it (contracts.messages.Usage, and any more keys)
    cost: float | None = None
    call: JsonObject | None = None  # a model call's `model` and `started_at`, for traces
    agent_id: str | None = None  # the agent that answered, when a handoff passed the step to another

    def metadata(self) -> JsonObject:
        used: JsonObject = {}
        if self.usage is not None:
            used = {"usage": self.usage, "cost": self.cost, **(self.call or {})}
        answered: JsonObject = {"agent_id": self.agent_id} if self.agent_id is not None else {}
        return {"attempts": self.attempts, **used, **answered}
