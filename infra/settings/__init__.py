"""Settings from the environment (the names are a contract: see DESIGN.md 1.1)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from contracts.temporal import QUEUE_KINDS, WORKFLOWS_KIND
from infra.settings.environment import Environment, base_urls, readable


@dataclass(frozen=True)
class Settings:
    api_port: int = 8080
    api_host: str = "127.0.0.1"
    api_key: str | None = None
    database_url: str | None = None
    temporal_address: str | None = None
    temporal_namespace: str = "default"
    temporal_api_key: str | None = None
    # TLS to Temporal, by the variables Temporal's CLI reads (infra/temporal/tls.py): TEMPORAL_TLS, and the
    # client certificate, its key and the server's CA as PEM files (`*_PATH`) or inline (`*_DATA`).
    temporal_tls: bool | None = None
    temporal_tls_client_cert_path: str | None = None
    temporal_tls_client_cert_data: str | None = None
    temporal_tls_client_key_path: str | None = None
    temporal_tls_client_key_data: str | None = None
    temporal_tls_server_ca_cert_path: str | None = None
    temporal_tls_server_ca_cert_data: str | None = None
    temporal_tls_server_name: str | None = None
    egress_allow: tuple[str, ...] = field(default_factory=tuple)
    task_queue: str = "mint-tasks"
    # Task queues of their own for model calls, HTTP calls (api_call, MCP) and background transition writes,
    # so that each can have workers sized and scaled apart (unset: the main task_queue). The API fixes them
    # into each execution when it starts; every process of a deployment must have the same.
    model_queue: str | None = None
    http_queue: str | None = None
    write_queue: str | None = None
    # This worker: which queues it polls (`workflows` is task_queue; the others are the kinds above) and how
    # much it runs at once; model calls have a cap of their own within its activities (0: none). Workflow
    # tasks count only while computed (one waiting on a call in the worker is idle), fewer while the worker's
    # CPU is short (infra/temporal/workflow_slots.py).
    worker_queues: tuple[str, ...] = ("workflows", "models", "http", "writes")
    worker_max_workflow_tasks: int = 100
    worker_max_model_calls: int = 0
    # Executions continue as new past this many Temporal history events (Temporal stops at 51,200).
    max_history_events: int = 10_000
    # Temporal payloads larger than this are stored in Postgres and travel as references (claim check).
    claim_check_bytes: int = 64 * 1024
    # The reconciler: how often it runs, and how long an execution must be quiet before it is checked.
    reconcile_interval: float = 30.0
    reconcile_quiet: float = 120.0
    # Models (infra/models/client.py): OpenAI and Anthropic as their SDKs read them, named OpenAI-compatible
    # endpoints, the model used when neither step, task nor agent names one, and recordings.
    openai_api_key: str | None = None
    openai_base_url: str | None = None
    anthropic_api_key: str | None = None
    anthropic_base_url: str | None = None
    model_endpoints: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    default_model: str = "gpt-4o-mini"
    model_record: str | None = None  # append every live model response to this file
    model_replay: str | None = None  # answer model calls from this file instead of a provider
    # Limits: request bodies (bytes), requests per API key per minute (0: none), executions in flight per
    # developer (queued, starting, running or awaiting input).
    max_body_bytes: int = 48 * 1024 * 1024
    # The most bytes one file (POST /files) may hold, decoded: larger answers 413. Its base64 (a third more)
    # must also fit in max_body_bytes.
    max_file_bytes: int = 10 * 1024 * 1024
    rate_limit_per_minute: int = 1200
    max_executions_in_flight: int = 1000
    # Schedules a developer may keep (each is a Temporal schedule that fires on its own): over it a create
    # answers 429 until one is deleted. 0: no limit.
    max_schedules_per_developer: int = 1000
    # Chats in flight per developer, per API process (0: no limit): services/chat/slots.py.
    max_chats_per_developer: int = 20
    # Adaptive context (services/chat/chatter.py): the share of a session's token budget past which its
    # context is compressed in the background. Half, as the Adaptive Context docs say (Julep's concepts page
    # says 75%): it leaves the compression room to finish before the budget is reached.
    adaptive_context_start: float = 0.5
    # Fairness between tenants (README: Fairness between tenants). `fairness`: each execution's workflow
    # starts with its developer as Temporal's fairness key, so a backlog is dispatched round-robin between
    # developers, not first come first served (the server must have it on: `mint up`'s does). The worker's
    # activity slots (regular and local) and, within them, the calls (model, api_call, integration, MCP) one
    # developer may have in flight at once in this worker process (activities/tenant_limits.py; 0: no cap).
    # The calls run in the worker are admitted there too, at most worker_max_local_activities at once, a freed
    # place going to the developer with the fewest in flight.
    fairness: bool = True
    worker_max_activities: int = 1000
    worker_max_local_activities: int = 1000
    max_calls_per_developer: int = 100
    # Database connections: the API's pool and the worker's are separate, so neither can starve the other;
    # waiting longer than db_acquire_timeout for a free connection is an error (a 503 from the API), never a
    # hang.
    api_db_pool_size: int = 10
    worker_db_pool_size: int = 16
    db_acquire_timeout: float = 10.0
    # Execution streams are woken by Postgres notifications (infra/store/execution_events.py); while those are
    # not arriving (the listening connection is reconnecting, or was never started), they re-read this often.
    stream_poll_seconds: float = 1.0
    # The MCP server (api/mcp_server.py): how long a tool call waits for its execution to end before it
    # answers the execution's id and status instead of its output.
    mcp_wait: float = 60.0
    # Stopping: in-flight requests and activities get this long to finish before they are cut off.
    shutdown_grace_seconds: float = 5.0
    # Limits on a task, checked when it is created (4xx): its size in bytes, the characters of one expression,
    # its steps (nested ones included); and, at run time, the items one foreach or map may run over.
    max_task_bytes: int = 1_000_000
    max_expression_length: int = 10_000
    max_steps: int = 1_000
    max_fan_out: int = 100_000
    # The most seconds an api_call tool's `timeout` (the whole call's deadline, redirects and body included)
    # may be: a larger one is refused when the task is created, or fails the step when it is computed.
    max_tool_timeout: float = 300.0
    # Doc embeddings: all-MiniLM-L6-v2 locally (the default), or `openai/<model>` (text-embedding-3-small, or
    # any model an OpenAI-protocol server at OPENAI_BASE_URL serves) in `embedding_dimensions` numbers (one of
    # infra.store.docs.SUPPORTED_DIMENSIONS: 1024 for Julep's). A developer may choose another for their docs.
    embedding_model: str = "all-MiniLM-L6-v2"
    embedding_dimensions: int = 384
    # MCP servers integration tools may start over stdio: {"name": {"command": ..., "args": [...], "env": {}}}.
    mcp_servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Integration providers' services (activities/integrations/): a base URL per provider, from
    # MINT_<PROVIDER>_BASE_URL (MINT_WEATHER_BASE_URL, ...), for a proxy or a local fake; the `email`
    # provider's SMTP server when a tool's setup names none.
    integration_base_urls: dict[str, str] = field(default_factory=dict)
    smtp_host: str | None = None
    smtp_port: int | None = None
    # Secrets at rest and Temporal payloads are encrypted with these keys (infra/store/crypto.py; the first one
    # encrypts). Without a key, secrets are unavailable and payloads travel in the clear.
    encryption_keys: tuple[str, ...] = field(default_factory=tuple)
    # The operator's credential for the codec server (/codec/decode, api/operator_auth.py): sent as a bearer
    # token or exchanged for a session cookie at /codec/sign-in. Unset: no codec server.
    codec_token: str | None = None
    # Browser origins (the Temporal UI's) whose requests may use that session cookie; CORS names them.
    codec_origins: tuple[str, ...] = field(default_factory=tuple)
    # Logs (infra/telemetry/logs.py): `plain` lines for a person, or `json` (one object a line) for a log
    # shipper; records below `log_level` are dropped.
    log_format: str = "plain"
    log_level: str = "INFO"
    # Prometheus metrics (infra/telemetry/metrics.py) served on metrics_host:metrics_port, for `mint worker`
    # (which has no other port) or any process; unset: only the API's operator-only /metrics. They ask for
    # metrics_token as a bearer token (a credential of its own, so that a worker never holds the codec token;
    # unset: the codec token where there is one, else none), and the API's /metrics sends it to the processes
    # it includes.
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"
    metrics_token: str | None = None
    # Traces go over OTLP/HTTP to this collector (`{endpoint}/v1/traces`) when set: infra/telemetry/tracing.py.
    otlp_endpoint: str | None = None
    # Other processes whose metrics the API's /metrics includes, as (process, URL): `mint up` names its
    # worker's here (not read from the environment).
    metrics_include: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    # Mint's search attributes (MintTask, MintAgent, MintDeveloper, MintStatus; contracts/temporal.py) on each
    # execution's workflow: `auto` sets them when the namespace has them registered (checked once when the API
    # starts: infra/temporal/search_attributes.py, which registers them on `mint up`'s own dev server), `on`
    # always (an unregistered one fails every start), `off` never.
    search_attributes: str = "auto"

    @classmethod
    def from_env(cls) -> Settings:
        """The settings the environment gives; a variable that is unset (or, for most, empty) leaves the
        default above. A bad value is a ValueError naming the variable."""
        try:
            found = Environment().model_dump(exclude_none=True)
        except ValidationError as exc:
            raise readable(exc) from None
        return cls(**found, integration_base_urls=base_urls(os.environ))

    def metrics_port_token(self) -> str | None:
        """The token the metrics port asks for, and the API's /metrics sends to the processes it includes."""
        return self.metrics_token or self.codec_token

    def activity_queues(self) -> dict[str, str]:
        """Activity name -> its task queue, for the kinds given a queue other than the main one (what the API
        fixes into each execution: ExecutionParams.queues)."""
        queues = {"models": self.model_queue, "http": self.http_queue, "writes": self.write_queue}
        return {
            name: queue
            for kind, queue in queues.items()
            if queue and queue != self.task_queue
            for name in QUEUE_KINDS[kind]
        }

    def polled_queues(self) -> dict[str, tuple[str, ...]]:
        """This worker's task queues, each with the kinds it runs there: the main queue for `workflows` (where
        every kind without a queue of its own runs too), and the queue of each other kind in worker_queues
        that has one. ValueError when that leaves nothing to poll."""
        own = {"models": self.model_queue, "http": self.http_queue, "writes": self.write_queue}
        polled: dict[str, tuple[str, ...]] = {}
        for kind in self.worker_queues:
            queue = self.task_queue if kind == WORKFLOWS_KIND else own[kind]
            if queue:
                polled[queue] = (*polled.get(queue, ()), kind)
        if not polled:
            raise ValueError(
                f"this worker polls no queue: MINT_WORKER_QUEUES (--queues) names {', '.join(self.worker_queues)}, "
                "which have no queue of their own (MINT_MODEL_QUEUE, MINT_HTTP_QUEUE, MINT_WRITE_QUEUE) and "
                "so run with the workflows"
            )
        return polled

    def model_config(self) -> ModelConfig:
        """The model layer's view; an endpoint's key is read from `<NAME>_API_KEY` when set."""
        names = [name for name, _ in self.model_endpoints]
        return ModelConfig(
            openai_api_key=self.openai_api_key,
            openai_base_url=self.openai_base_url,
            anthropic_api_key=self.anthropic_api_key,
            anthropic_base_url=self.anthropic_base_url,
            endpoints=dict(self.model_endpoints),
            endpoint_keys={
                n: k for n in names if (k := os.environ.get(f"{n.upper().replace('-', '_')}_API_KEY"))
            },
            default_model=self.default_model,
        )


@dataclass(frozen=True)
class ModelConfig:
    """Where models are: OpenAI and Anthropic (keys and base URLs as the SDKs read them), and named
    OpenAI-compatible endpoints (`ollama/llama3` goes to the endpoint named `ollama`)."""

    openai_api_key: str | None = None
    openai_base_url: str | None = None
    anthropic_api_key: str | None = None
    anthropic_base_url: str | None = None
    endpoints: dict[str, str] = field(default_factory=dict)  # name -> base URL
    endpoint_keys: dict[str, str] = field(default_factory=dict)  # name -> API key, when one is needed
    default_model: str = "gpt-4o-mini"
    request_timeout: float = 600.0

    def route(self, model: str) -> tuple[str, str]:
        """(provider, model name for that provider): `openai`, `anthropic` or an endpoint name."""
        prefix, _, rest = model.partition("/")
        if rest and (prefix in ("openai", "anthropic") or prefix in self.endpoints):
            return prefix, rest
        return ("anthropic" if model.startswith("claude") else "openai"), model

    def configured(self) -> list[str]:
        """Providers with a key (or, for endpoints, a base URL): what GET /agents/models lists."""
        providers = [
            name
            for name, key in (("openai", self.openai_api_key), ("anthropic", self.anthropic_api_key))
            if key
        ]
        return providers + sorted(self.endpoints)
