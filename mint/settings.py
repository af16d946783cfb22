"""Settings from the environment (the names are a contract: see DESIGN.md 1.1)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mint.crypto import MIN_KEY_CHARS, parse_keys

if TYPE_CHECKING:
    from mint.embeddings import Embedder


@dataclass(frozen=True)
class Settings:
    api_port: int = 8080
    api_host: str = "127.0.0.1"
    api_key: str | None = None
    database_url: str | None = None
    temporal_address: str | None = None
    temporal_namespace: str = "default"
    temporal_api_key: str | None = None
    egress_allow: tuple[str, ...] = field(default_factory=tuple)
    task_queue: str = "mint-tasks"
    # Executions continue as new past this many Temporal history events (Temporal stops at 51,200).
    max_history_events: int = 10_000
    # Temporal payloads larger than this are stored in Postgres and travel as references (claim check).
    claim_check_bytes: int = 64 * 1024
    # The reconciler: how often it runs, and how long an execution must be quiet before it is checked.
    reconcile_interval: float = 30.0
    reconcile_quiet: float = 120.0
    # Models (activities/models.py): OpenAI and Anthropic as their SDKs read them, named OpenAI-compatible
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
    rate_limit_per_minute: int = 1200
    max_executions_in_flight: int = 1000
    # Chats in flight per developer, per API process (0: no limit): services/chat/slots.py.
    max_chats_per_developer: int = 20
    # Database connections: the API's pool and the worker's are separate, so neither can starve the other;
    # waiting longer than db_acquire_timeout for a free connection is an error (a 503 from the API), never a
    # hang.
    api_db_pool_size: int = 10
    worker_db_pool_size: int = 16
    db_acquire_timeout: float = 10.0
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
    # Doc embeddings: all-MiniLM-L6-v2 locally (the default), or `openai/text-embedding-3-small`.
    embedding_model: str = "all-MiniLM-L6-v2"
    # MCP servers integration tools may start over stdio: {"name": {"command": ..., "args": [...], "env": {}}}.
    mcp_servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Secrets at rest and Temporal payloads are encrypted with these keys (mint/crypto.py; the first one
    # encrypts). Without a key, secrets are unavailable and payloads travel in the clear.
    encryption_keys: tuple[str, ...] = field(default_factory=tuple)
    # The operator's credential for the codec server (/codec/decode, api/operator_auth.py): sent as a bearer
    # token or exchanged for a session cookie at /codec/sign-in. Unset: no codec server.
    codec_token: str | None = None
    # Browser origins (the Temporal UI's) whose requests may use that session cookie; CORS names them.
    codec_origins: tuple[str, ...] = field(default_factory=tuple)

    @classmethod
    def from_env(cls) -> Settings:
        env = os.environ
        return cls(
            api_port=int(env.get("MINT_API_PORT", "8080")),
            api_host=env.get("MINT_API_HOST", "127.0.0.1"),
            api_key=env.get("MINT_API_KEY") or None,
            database_url=env.get("MINT_DATABASE_URL") or None,
            temporal_address=env.get("TEMPORAL_ADDRESS") or None,
            temporal_namespace=env.get("TEMPORAL_NAMESPACE", "default"),
            temporal_api_key=env.get("TEMPORAL_API_KEY") or None,
            egress_allow=tuple(h.strip() for h in env.get("MINT_EGRESS_ALLOW", "").split(",") if h.strip()),
            task_queue=env.get("MINT_TASK_QUEUE", "mint-tasks"),
            max_history_events=int(env.get("MINT_MAX_HISTORY_EVENTS", "10000")),
            claim_check_bytes=int(env.get("MINT_CLAIM_CHECK_BYTES", str(64 * 1024))),
            reconcile_interval=float(env.get("MINT_RECONCILE_INTERVAL", "30")),
            reconcile_quiet=float(env.get("MINT_RECONCILE_QUIET", "120")),
            openai_api_key=env.get("OPENAI_API_KEY") or None,
            openai_base_url=env.get("OPENAI_BASE_URL") or None,
            anthropic_api_key=env.get("ANTHROPIC_API_KEY") or None,
            anthropic_base_url=env.get("ANTHROPIC_BASE_URL") or None,
            model_endpoints=_endpoints(env.get("MINT_MODEL_ENDPOINTS", "")),
            default_model=env.get("MINT_DEFAULT_MODEL") or "gpt-4o-mini",
            model_record=env.get("MINT_MODEL_RECORD") or None,
            model_replay=env.get("MINT_MODEL_REPLAY") or None,
            embedding_model=env.get("MINT_EMBEDDING_MODEL") or "all-MiniLM-L6-v2",
            max_body_bytes=int(env.get("MINT_MAX_BODY_BYTES", str(48 * 1024 * 1024))),
            rate_limit_per_minute=int(env.get("MINT_RATE_LIMIT_PER_MINUTE", "1200")),
            max_executions_in_flight=int(env.get("MINT_MAX_EXECUTIONS_IN_FLIGHT", "1000")),
            max_chats_per_developer=int(env.get("MINT_MAX_CHATS_PER_DEVELOPER", "20")),
            api_db_pool_size=int(env.get("MINT_API_DB_POOL_SIZE", "10")),
            worker_db_pool_size=int(env.get("MINT_WORKER_DB_POOL_SIZE", "16")),
            db_acquire_timeout=float(env.get("MINT_DB_ACQUIRE_TIMEOUT", "10")),
            shutdown_grace_seconds=float(env.get("MINT_SHUTDOWN_GRACE_SECONDS", "5")),
            max_task_bytes=int(env.get("MINT_MAX_TASK_BYTES", "1000000")),
            max_expression_length=int(env.get("MINT_MAX_EXPRESSION_LENGTH", "10000")),
            max_steps=int(env.get("MINT_MAX_STEPS", "1000")),
            max_fan_out=int(env.get("MINT_MAX_FAN_OUT", "100000")),
            max_tool_timeout=_positive(
                "MINT_MAX_TOOL_TIMEOUT_SECONDS", env.get("MINT_MAX_TOOL_TIMEOUT_SECONDS", "300")
            ),
            mcp_servers=_json_object("MINT_MCP_SERVERS", env.get("MINT_MCP_SERVERS", "")),
            encryption_keys=parse_keys(env.get("MINT_ENCRYPTION_KEY")),
            codec_token=_codec_token(env.get("MINT_CODEC_TOKEN")),
            codec_origins=_origins(env.get("MINT_CODEC_ORIGINS", "")),
        )

    def embedder(self) -> Embedder:
        from mint.embeddings import embedder_for  # (the SDKs it needs load only here)

        return embedder_for(self.embedding_model, self.openai_api_key, self.openai_base_url)

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


def _positive(name: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number of seconds, not {raw!r}") from None
    if not 0 < value < float("inf"):
        raise ValueError(f"{name} must be more than 0 (and finite), not {raw!r}")
    return value


def _json_object(name: str, raw: str) -> dict[str, Any]:
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be a JSON object: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{name} must be a JSON object")
    return value


def _codec_token(raw: str | None) -> str | None:
    """The codec server's token opens every tenant's payloads and is typed into a sign-in form that anyone
    who reaches the API can post to: it must be too long to guess."""
    if raw and len(raw) < MIN_KEY_CHARS:
        raise ValueError(
            f"MINT_CODEC_TOKEN must be at least {MIN_KEY_CHARS} characters "
            "(try `python -c 'import secrets; print(secrets.token_urlsafe(32))'`)"
        )
    return raw or None


def _origins(raw: str) -> tuple[str, ...]:
    """`http://127.0.0.1:8233,http://localhost:8233`: origins compare exactly, so no trailing slash."""
    return tuple(o.strip().rstrip("/") for o in raw.split(",") if o.strip())


def _endpoints(raw: str) -> tuple[tuple[str, str], ...]:
    """`ollama=http://127.0.0.1:11434/v1,vllm=http://gpu:8000/v1` as ((name, base URL), ...)."""
    pairs = []
    for item in raw.split(","):
        name, _, url = item.strip().partition("=")
        if name and url:
            pairs.append((name.strip(), url.strip()))
    return tuple(pairs)


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
