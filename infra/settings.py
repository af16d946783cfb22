"""Settings from the environment (the names are a contract: see DESIGN.md 1.1)."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from contracts.temporal import QUEUE_KINDS, WORKFLOWS_KIND
from infra.store.crypto import MIN_KEY_CHARS, parse_keys


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
            raise _readable(exc) from None
        return cls(**found, integration_base_urls=_base_urls(os.environ))

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


BASE_URL_VARIABLE = re.compile(r"^MINT_([A-Z0-9_]+)_BASE_URL$")


def _base_urls(environ: Any) -> dict[str, str]:
    """{provider: URL} from every non-empty MINT_<PROVIDER>_BASE_URL (`weather` from MINT_WEATHER_BASE_URL)."""
    found = {}
    for name, value in environ.items():
        match = BASE_URL_VARIABLE.match(name)
        if match and value.strip():
            found[match.group(1).lower()] = value.strip()
    return found


def _empty_is_unset(raw: str) -> str | None:
    return raw or None


def _names(raw: str) -> tuple[str, ...]:
    """`a, b,c` as ("a", "b", "c")."""
    return tuple(item.strip() for item in raw.split(",") if item.strip())


def _positive(raw: str) -> float:
    name = "MINT_MAX_TOOL_TIMEOUT_SECONDS"
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number of seconds, not {raw!r}") from None
    if not 0 < value < float("inf"):
        raise ValueError(f"{name} must be more than 0 (and finite), not {raw!r}")
    return value


def _share(raw: str) -> float | None:
    name = "MINT_ADAPTIVE_CONTEXT_START"
    if not raw.strip():
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a share of the token budget (0.5 is half), not {raw!r}") from None
    if not 0 < value <= 1:
        raise ValueError(f"{name} must be more than 0 and at most 1, not {raw!r}")
    return value


def _json_object(raw: str) -> dict[str, Any]:
    name = "MINT_MCP_SERVERS"
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be a JSON object: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{name} must be a JSON object")
    return value


MAKE_ONE = "try `python -c 'import secrets; print(secrets.token_urlsafe(32))'`"


def _long_token(name: str) -> Any:
    """A validator for a token that must be too long to guess: the codec server's opens every tenant's
    payloads and is typed into a sign-in form that anyone who reaches the API can post to; the metrics
    token's port may be reachable from a whole network."""

    def check(raw: str) -> str | None:
        if raw and len(raw) < MIN_KEY_CHARS:
            raise ValueError(f"{name} must be at least {MIN_KEY_CHARS} characters ({MAKE_ONE})")
        return raw or None

    return BeforeValidator(check)


# The variables that hold a secret. None may keep an example's placeholder: deploy/k8s/secret.example.yaml's
# values (`CHANGE-ME-32-or-more-random-characters`, the database password `CHANGE-ME`) are long enough to
# pass every other check, and would otherwise start a cluster whose keys anyone can read on GitHub.
SECRET_VARIABLES = (
    "MINT_API_KEY",
    "MINT_DATABASE_URL",
    "MINT_ENCRYPTION_KEY",
    "MINT_CODEC_TOKEN",
    "MINT_METRICS_TOKEN",
    "TEMPORAL_API_KEY",
    "TEMPORAL_TLS_CLIENT_KEY_DATA",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
)
# A placeholder: CHANGE-ME as a word of its own, in any case, with `-`, `_`, a space or nothing between
# (`CHANGE-ME-...`, `change_me`, `ChangeMe`, `:CHANGE-ME@`), but not inside a word (`exchange-meetings`).
PLACEHOLDER = re.compile(r"(?<![a-z])change[-_ ]?me(?![a-z])", re.IGNORECASE)
# The secrets that must differ from each other: one value in two places would give whoever holds one
# (a developer's API key, a worker's environment) the other's power too.
DISTINCT_SECRETS = {
    "api_key": "MINT_API_KEY",
    "encryption_keys": "MINT_ENCRYPTION_KEY",
    "codec_token": "MINT_CODEC_TOKEN",
    "metrics_token": "MINT_METRICS_TOKEN",
}


def _refuse_placeholders(environ: Any) -> Any:
    """No secret variable may still hold a placeholder (SECRET_VARIABLES, PLACEHOLDER); never quoted."""
    if isinstance(environ, dict):
        for name in SECRET_VARIABLES:
            value = environ.get(name)
            if isinstance(value, str) and PLACEHOLDER.search(value):
                raise ValueError(f"{name} still holds an example's CHANGE-ME placeholder: set a real value")
    return environ


def _refuse_shared_secrets(found: dict[str, Any]) -> None:
    """No two of DISTINCT_SECRETS may share a value (none of MINT_ENCRYPTION_KEY's keys either)."""
    seen: dict[str, str] = {}
    for field_name, name in DISTINCT_SECRETS.items():
        value = found.get(field_name)
        for secret in filter(None, value if isinstance(value, tuple) else (value,)):
            if seen.get(secret, name) != name:
                raise ValueError(
                    f"{seen[secret]} and {name} have the same value: give each its own secret ({MAKE_ONE})"
                )
            seen[secret] = name


def _log_format(raw: str) -> str | None:
    if raw and raw.lower() not in ("plain", "json"):
        raise ValueError(f"MINT_LOG_FORMAT must be plain or json, not {raw!r}")
    return raw.lower() or None


def _log_level(raw: str) -> str | None:
    if raw and raw.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        raise ValueError(f"MINT_LOG_LEVEL must be DEBUG, INFO, WARNING or ERROR, not {raw!r}")
    return raw.upper() or None


def _origins(raw: str) -> tuple[str, ...]:
    """`http://127.0.0.1:8233,http://localhost:8233`: origins compare exactly, so no trailing slash."""
    return tuple(o.rstrip("/") for o in _names(raw))


def parse_queue_kinds(raw: str, name: str = "MINT_WORKER_QUEUES") -> tuple[str, ...]:
    """MINT_WORKER_QUEUES (or `mint worker --queues`): `workflows,models,http,writes` or some of them."""
    kinds = _names(raw)
    unknown = [k for k in kinds if k not in (WORKFLOWS_KIND, *QUEUE_KINDS)]
    if unknown or not kinds:
        what = f"unknown queue {unknown[0]!r}" if unknown else "no queue named"
        raise ValueError(f"{name}: {what}; the queues are {', '.join((WORKFLOWS_KIND, *QUEUE_KINDS))}")
    return kinds


def _queue_kinds(raw: str) -> tuple[str, ...] | None:
    return parse_queue_kinds(raw) if raw.strip() else None


# Past any real worker, and within what the Temporal SDK's slot counts hold (a larger number failed to start).
MAX_WORKER_SLOTS = 1_000_000


def _at_least_one(raw: str) -> int | None:
    if not raw.strip():
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"a MINT_WORKER_MAX_* setting must be a whole number, not {raw!r}") from None
    if value < 1:
        raise ValueError(f"a MINT_WORKER_MAX_* setting must be at least 1, not {raw!r}")
    if value > MAX_WORKER_SLOTS:
        raise ValueError(f"a MINT_WORKER_MAX_* setting must be at most {MAX_WORKER_SLOTS:,}, not {raw!r}")
    return value


def _flag(raw: str) -> bool | None:
    """TEMPORAL_TLS: true or false (1/0, yes/no, on/off; empty: unset), as Temporal's CLI reads it."""
    value = raw.strip().lower()
    if not value:
        return None
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"TEMPORAL_TLS must be true or false, not {raw!r}")


def _switch(raw: str) -> str | None:
    """MINT_SEARCH_ATTRIBUTES: `auto`, `on` or `off` (empty: unset)."""
    value = raw.strip().lower()
    if value and value not in ("auto", "on", "off"):
        raise ValueError(f"MINT_SEARCH_ATTRIBUTES must be auto, on or off, not {raw!r}")
    return value or None


def _endpoints(raw: str) -> tuple[tuple[str, str], ...]:
    """`ollama=http://127.0.0.1:11434/v1,vllm=http://gpu:8000/v1` as ((name, base URL), ...)."""
    pairs = []
    for item in raw.split(","):
        name, _, url = item.strip().partition("=")
        if name and url:
            pairs.append((name.strip(), url.strip()))
    return tuple(pairs)


# What a variable's raw text becomes. Optional text: empty counts as unset, so the default applies.
Text = Annotated[str | None, BeforeValidator(_empty_is_unset)]
Names = Annotated[tuple[str, ...] | None, BeforeValidator(_names)]


def _env(name: str) -> Any:
    """A field read from the environment variable `name` (exactly that name, case included)."""
    return Field(None, validation_alias=name)


class Environment(BaseSettings):
    """The environment variables behind Settings (DESIGN.md 1.1 and the README's Configuration list them),
    parsed and checked by pydantic-settings. Every field is None when its variable is unset, so that the
    defaults live in one place: Settings above."""

    # Raw strings reach the validators (no JSON decoding of lists and dicts); names match exactly, as
    # os.environ does; an unset variable is None, not validated.
    model_config = SettingsConfigDict(case_sensitive=True, enable_decoding=False, validate_default=False)

    api_port: int | None = _env("MINT_API_PORT")
    api_host: str | None = _env("MINT_API_HOST")
    api_key: Text = _env("MINT_API_KEY")
    database_url: Text = _env("MINT_DATABASE_URL")
    temporal_address: Text = _env("TEMPORAL_ADDRESS")
    temporal_namespace: str | None = _env("TEMPORAL_NAMESPACE")
    temporal_api_key: Text = _env("TEMPORAL_API_KEY")
    temporal_tls: Annotated[bool | None, BeforeValidator(_flag)] = _env("TEMPORAL_TLS")
    temporal_tls_client_cert_path: Text = _env("TEMPORAL_TLS_CLIENT_CERT_PATH")
    temporal_tls_client_cert_data: Text = _env("TEMPORAL_TLS_CLIENT_CERT_DATA")
    temporal_tls_client_key_path: Text = _env("TEMPORAL_TLS_CLIENT_KEY_PATH")
    temporal_tls_client_key_data: Text = _env("TEMPORAL_TLS_CLIENT_KEY_DATA")
    temporal_tls_server_ca_cert_path: Text = _env("TEMPORAL_TLS_SERVER_CA_CERT_PATH")
    temporal_tls_server_ca_cert_data: Text = _env("TEMPORAL_TLS_SERVER_CA_CERT_DATA")
    temporal_tls_server_name: Text = _env("TEMPORAL_TLS_SERVER_NAME")
    egress_allow: Names = _env("MINT_EGRESS_ALLOW")
    task_queue: str | None = _env("MINT_TASK_QUEUE")
    model_queue: Text = _env("MINT_MODEL_QUEUE")
    http_queue: Text = _env("MINT_HTTP_QUEUE")
    write_queue: Text = _env("MINT_WRITE_QUEUE")
    worker_queues: Annotated[tuple[str, ...] | None, BeforeValidator(_queue_kinds)] = _env(
        "MINT_WORKER_QUEUES"
    )
    worker_max_workflow_tasks: Annotated[int | None, BeforeValidator(_at_least_one)] = _env(
        "MINT_WORKER_MAX_WORKFLOW_TASKS"
    )
    worker_max_activities: Annotated[int | None, BeforeValidator(_at_least_one)] = _env(
        "MINT_WORKER_MAX_ACTIVITIES"
    )
    worker_max_local_activities: Annotated[int | None, BeforeValidator(_at_least_one)] = _env(
        "MINT_WORKER_MAX_LOCAL_ACTIVITIES"
    )
    worker_max_model_calls: int | None = _env("MINT_WORKER_MAX_MODEL_CALLS")
    max_history_events: int | None = _env("MINT_MAX_HISTORY_EVENTS")
    claim_check_bytes: int | None = _env("MINT_CLAIM_CHECK_BYTES")
    reconcile_interval: float | None = _env("MINT_RECONCILE_INTERVAL")
    reconcile_quiet: float | None = _env("MINT_RECONCILE_QUIET")
    openai_api_key: Text = _env("OPENAI_API_KEY")
    openai_base_url: Text = _env("OPENAI_BASE_URL")
    anthropic_api_key: Text = _env("ANTHROPIC_API_KEY")
    anthropic_base_url: Text = _env("ANTHROPIC_BASE_URL")
    model_endpoints: Annotated[tuple[tuple[str, str], ...] | None, BeforeValidator(_endpoints)] = _env(
        "MINT_MODEL_ENDPOINTS"
    )
    default_model: Text = _env("MINT_DEFAULT_MODEL")
    model_record: Text = _env("MINT_MODEL_RECORD")
    model_replay: Text = _env("MINT_MODEL_REPLAY")
    embedding_model: Text = _env("MINT_EMBEDDING_MODEL")
    embedding_dimensions: int | None = _env("MINT_EMBEDDING_DIMENSIONS")
    max_body_bytes: int | None = _env("MINT_MAX_BODY_BYTES")
    max_file_bytes: int | None = _env("MINT_MAX_FILE_BYTES")
    rate_limit_per_minute: int | None = _env("MINT_RATE_LIMIT_PER_MINUTE")
    max_executions_in_flight: int | None = _env("MINT_MAX_EXECUTIONS_IN_FLIGHT")
    max_chats_per_developer: int | None = _env("MINT_MAX_CHATS_PER_DEVELOPER")
    adaptive_context_start: Annotated[float | None, BeforeValidator(_share)] = _env(
        "MINT_ADAPTIVE_CONTEXT_START"
    )
    fairness: bool | None = _env("MINT_FAIRNESS")
    max_calls_per_developer: int | None = _env("MINT_MAX_CALLS_PER_DEVELOPER")
    api_db_pool_size: int | None = _env("MINT_API_DB_POOL_SIZE")
    worker_db_pool_size: int | None = _env("MINT_WORKER_DB_POOL_SIZE")
    db_acquire_timeout: float | None = _env("MINT_DB_ACQUIRE_TIMEOUT")
    shutdown_grace_seconds: float | None = _env("MINT_SHUTDOWN_GRACE_SECONDS")
    max_task_bytes: int | None = _env("MINT_MAX_TASK_BYTES")
    max_expression_length: int | None = _env("MINT_MAX_EXPRESSION_LENGTH")
    max_steps: int | None = _env("MINT_MAX_STEPS")
    max_fan_out: int | None = _env("MINT_MAX_FAN_OUT")
    max_tool_timeout: Annotated[float | None, BeforeValidator(_positive)] = _env(
        "MINT_MAX_TOOL_TIMEOUT_SECONDS"
    )
    # Any JSON object passes, as it always has (Settings.mcp_servers says what an entry holds).
    mcp_servers: Annotated[dict[str, Any] | None, BeforeValidator(_json_object)] = _env("MINT_MCP_SERVERS")
    smtp_host: Text = _env("MINT_SMTP_HOST")
    smtp_port: int | None = _env("MINT_SMTP_PORT")
    encryption_keys: Annotated[tuple[str, ...] | None, BeforeValidator(parse_keys)] = _env(
        "MINT_ENCRYPTION_KEY"
    )
    codec_token: Annotated[str | None, _long_token("MINT_CODEC_TOKEN")] = _env("MINT_CODEC_TOKEN")
    codec_origins: Annotated[tuple[str, ...] | None, BeforeValidator(_origins)] = _env("MINT_CODEC_ORIGINS")
    log_format: Annotated[str | None, BeforeValidator(_log_format)] = _env("MINT_LOG_FORMAT")
    log_level: Annotated[str | None, BeforeValidator(_log_level)] = _env("MINT_LOG_LEVEL")
    metrics_port: int | None = _env("MINT_METRICS_PORT")
    metrics_host: Text = _env("MINT_METRICS_HOST")
    metrics_token: Annotated[str | None, _long_token("MINT_METRICS_TOKEN")] = _env("MINT_METRICS_TOKEN")
    otlp_endpoint: Text = _env("OTEL_EXPORTER_OTLP_ENDPOINT")
    search_attributes: Annotated[str | None, BeforeValidator(_switch)] = _env("MINT_SEARCH_ATTRIBUTES")

    @model_validator(mode="before")
    @classmethod
    def _no_placeholders(cls, environ: Any) -> Any:
        # Before any other check, so that the message says what is wrong (a placeholder is often too short).
        return _refuse_placeholders(environ)

    @model_validator(mode="after")
    def _distinct_secrets(self) -> Environment:
        _refuse_shared_secrets(self.__dict__)
        return self


def _readable(exc: ValidationError) -> ValueError:
    """The first problem as a plain ValueError: our own checks' messages as they are (pydantic's wording
    would quote the input, a secret's too), pydantic's own (numbers only) with the variable's name."""
    error = exc.errors()[0]
    if error["type"] == "value_error":
        return ValueError(str(error["ctx"]["error"]))
    name = error["loc"][0] if error["loc"] else "a setting"
    return ValueError(f"{name}: {error['msg']}, not {error['input']!r}")


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
