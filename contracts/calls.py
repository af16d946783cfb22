"""The payloads of the activities a step calls out through: the model, server-side tools, doc search.

Each activity takes one request object and returns one answer object (as pydantic-ai's Temporal integration
does), so that a new field is a default here rather than a key to remember in two places. Field names are
part of recorded histories: add fields only with defaults, never rename one."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict

from contracts.json import JsonObject, JsonValue
from contracts.messages import Completion, Message, Usage
from contracts.transitions import TransitionBatch


@dataclass
class Owner:
    """Whose call this is: the developer, the agent whose tools and secrets it may use, and the execution
    that makes it (None for calls outside one)."""

    developer_id: str
    agent_id: str | None = None
    # The execution, for reading; call_model charges the budget of the workflow it runs in, never this field
    # (activities/models.py), so a caller that leaves it out cannot make a call unbudgeted.
    execution_id: str | None = None


@dataclass
class CallAnswer:
    """What call_api, call_system, call_mcp and search_docs return: the answer and the attempt that gave it
    (recorded on the step's transition)."""

    response: Any
    attempt: int


@dataclass
class ModelRequest:
    """A model call, provider-neutral (OpenAI's chat format; infra/models/client.py translates): call_model's
    input, and what a chat asks its models (services/chat/calls.py). `settings`, the tools' schemas and
    `response_format` are as the agent, task or request gives them."""

    model: str | None
    messages: list[Message]
    settings: JsonObject
    tools: list[JsonObject]
    tool_choice: str | JsonObject | None
    response_format: JsonObject | None
    at: str  # the step (`task name:main[2]`), where recordings file the call
    owner: Owner  # whose secrets may hold the provider's key
    # A prompt step with `stream: true`: the name its live text goes out under on the execution's stream (its
    # label, else its place); None (every other call, and one whose text output guardrails hold back) streams
    # nothing live.
    stream_as: str | None = None


@dataclass
class ModelAnswer:
    """A model call's result: an OpenAI chat completion, its token usage and cost (None for an unpriced model),
    and (call_model's) the activity's attempt that gave it."""

    response: Completion
    usage: Usage
    cost: float | None
    attempt: int = 1


class SecretScope(TypedDict):
    """Whose secrets an api_call's `{{ secrets.NAME }}` references name, and the nonce that marks them."""

    developer_id: str
    agent_id: str | None
    nonce: str


class ApiCallRequest(TypedDict, total=False):
    """call_api's input: one HTTP request. A TypedDict, not a dataclass: it holds only the keys the tool's
    spec and the step's arguments set (httpx's names), and a dataclass would add the rest as nulls."""

    method: str
    url: str
    headers: dict[str, Any]
    params: dict[str, Any] | None
    json: JsonValue
    content: Any
    data: Any
    timeout: float
    follow_redirects: bool
    secrets: SecretScope


@dataclass
class SystemCallRequest:
    """call_system's input: one of Mint's own operations, as the execution's developer."""

    developer_id: str
    system: dict[str, Any]  # the tool's `system` spec: resource, subresource, operation
    arguments: Any


class McpIntegration(TypedDict, total=False):
    """An MCP tool's `integration`, list_mcp_tools' input: `setup` names the server (`server` or `url`)."""

    provider: str
    method: str
    setup: JsonObject
    parameters: JsonObject


@dataclass
class McpCallRequest:
    """call_mcp's input: call `tool` on the integration's server."""

    integration: McpIntegration
    tool: str
    arguments: Any


@dataclass
class IntegrationCallRequest:
    """call_integration's input: one call of a provider's method (workflows/integrations.py). `setup` and
    `arguments` may hold secret references (`secrets` says whose, as for api_call); `timeout` is the whole
    call's deadline in seconds; `key` is the same on every attempt (an Idempotency-Key where the service
    takes one)."""

    provider: str
    method: str
    setup: JsonObject
    arguments: JsonObject
    timeout: float
    key: str
    secrets: SecretScope | None = None


@dataclass
class McpTool:
    """One tool list_mcp_tools found on a server."""

    name: str
    description: str
    parameters: JsonObject


@dataclass
class SearchRequest:
    """search_docs' input: the search step's query over the docs of `owner_ids` (agent, user)."""

    developer_id: str
    owner_ids: list[str]
    mode: str  # text, vector or hybrid
    text: str
    limit: int
    metadata_filter: JsonObject
    alpha: float
    mmr_strength: float
    confidence: float


@dataclass
class RecordedAnswer:
    """A call's answer (its activity's result, as JSON), recorded under the call's id."""

    call_id: str
    answer: Any


@dataclass
class WorkerCall:
    """call_in_worker's input: a call step's activity run by the workflow's own worker (a local activity).

    `request` is the named activity's input as JSON (its type is in contracts.temporal.ACTIVITIES); the result
    is that activity's. Before the call, in one transaction, the worker writes `transitions` (those the
    workflow had pending, if any), records `answers` (of the workflow's earlier calls in the worker, not yet
    recorded), and looks up `call_id`: a call that answered before (in a run of the workflow task that was
    lost with its worker) returns its recorded answer instead of calling again."""

    activity: str
    request: Any
    execution_id: str
    developer_id: str
    call_id: str
    transitions: TransitionBatch | None = None
    answers: list[RecordedAnswer] = field(default_factory=list)


@dataclass
class BatchedCall:
    """One item's call in a CallBatch: its id (its answer is recorded under it), the activity's input as
    JSON, and how long one attempt may take (seconds)."""

    call_id: str
    request: Any
    timeout: float


@dataclass
class BatchRetry:
    """A step's retry policy as data, for the batch to apply to each of its calls itself (Temporal's would
    retry the whole batch). `maximum_attempts` 0 is no limit; `non_retryable` lists error types."""

    maximum_attempts: int
    initial_interval: float
    backoff: float
    maximum_interval: float
    non_retryable: list[str] = field(default_factory=list)


@dataclass
class CallBatch:
    """call_batch_in_worker's input: the calls of a fan-out's items (one api_call step each) that the
    workflow's own worker makes, `width` at a time, each with the step's retries; each answer is recorded
    under its call's id as it comes, so a batch run again (a retry, or its workflow task lost with the worker)
    calls only what has no answer yet. `transitions` and `answers` are as a WorkerCall's."""

    activity: str
    calls: list[BatchedCall]
    width: int
    retry: BatchRetry
    execution_id: str
    developer_id: str
    transitions: TransitionBatch | None = None
    answers: list[RecordedAnswer] = field(default_factory=list)


@dataclass
class CallFailure:
    """How a batched call failed after its last attempt: what a call activity's error would have said."""

    message: str
    type: str | None
    non_retryable: bool
    timed_out: bool  # its attempt ran out of time (a StartToClose timeout, as Temporal would say)


@dataclass
class BatchOutcome:
    """One batched call's end: its answer, or its failure, or neither (not made: another call of the batch
    failed first, which fails the fan-out)."""

    answer: CallAnswer | None = None
    failure: CallFailure | None = None
