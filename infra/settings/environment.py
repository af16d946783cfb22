"""The environment variables behind Settings, read and checked by pydantic-settings."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from infra.settings.parsers import (
    budget_share,
    endpoint_list,
    json_object,
    log_format_name,
    log_level_name,
    name_list,
    optional_text,
    origin_list,
    positive_seconds,
    queue_kinds,
    switch,
    tls_flag,
    worker_slots,
)
from infra.settings.secret_checks import long_token, refuse_placeholders, refuse_shared_secrets
from infra.store.crypto import parse_keys

# What a variable's raw text becomes. Optional text: empty counts as unset, so the default applies.
Text = Annotated[str | None, BeforeValidator(optional_text)]
Names = Annotated[tuple[str, ...] | None, BeforeValidator(name_list)]


def _env(name: str) -> Any:
    """A field read from the environment variable `name` (exactly that name, case included)."""
    return Field(None, validation_alias=name)


class Environment(BaseSettings):
    """The environment variables behind Settings (DESIGN.md 1.1 and the README's Configuration list them),
    parsed and checked by pydantic-settings. Every field is None when its variable is unset, so that the
    defaults live in one place: Settings (infra/settings/__init__.py)."""

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
    temporal_tls: Annotated[bool | None, BeforeValidator(tls_flag)] = _env("TEMPORAL_TLS")
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
    worker_queues: Annotated[tuple[str, ...] | None, BeforeValidator(queue_kinds)] = _env(
        "MINT_WORKER_QUEUES"
    )
    worker_max_workflow_tasks: Annotated[int | None, BeforeValidator(worker_slots)] = _env(
        "MINT_WORKER_MAX_WORKFLOW_TASKS"
    )
    worker_max_activities: Annotated[int | None, BeforeValidator(worker_slots)] = _env(
        "MINT_WORKER_MAX_ACTIVITIES"
    )
    worker_max_local_activities: Annotated[int | None, BeforeValidator(worker_slots)] = _env(
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
    model_endpoints: Annotated[tuple[tuple[str, str], ...] | None, BeforeValidator(endpoint_list)] = _env(
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
    max_schedules_per_developer: int | None = _env("MINT_MAX_SCHEDULES_PER_DEVELOPER")
    max_chats_per_developer: int | None = _env("MINT_MAX_CHATS_PER_DEVELOPER")
    adaptive_context_start: Annotated[float | None, BeforeValidator(budget_share)] = _env(
        "MINT_ADAPTIVE_CONTEXT_START"
    )
    fairness: bool | None = _env("MINT_FAIRNESS")
    max_calls_per_developer: int | None = _env("MINT_MAX_CALLS_PER_DEVELOPER")
    api_db_pool_size: int | None = _env("MINT_API_DB_POOL_SIZE")
    worker_db_pool_size: int | None = _env("MINT_WORKER_DB_POOL_SIZE")
    db_acquire_timeout: float | None = _env("MINT_DB_ACQUIRE_TIMEOUT")
    shutdown_grace_seconds: float | None = _env("MINT_SHUTDOWN_GRACE_SECONDS")
    mcp_wait: Annotated[float | None, Field(ge=0, le=3600, allow_inf_nan=False)] = _env("MINT_MCP_WAIT")
    max_task_bytes: int | None = _env("MINT_MAX_TASK_BYTES")
    max_expression_length: int | None = _env("MINT_MAX_EXPRESSION_LENGTH")
    max_steps: int | None = _env("MINT_MAX_STEPS")
    max_fan_out: int | None = _env("MINT_MAX_FAN_OUT")
    max_tool_timeout: Annotated[float | None, BeforeValidator(positive_seconds)] = _env(
        "MINT_MAX_TOOL_TIMEOUT_SECONDS"
    )
    # Any JSON object passes, as it always has (Settings.mcp_servers says what an entry holds).
    mcp_servers: Annotated[dict[str, object] | None, BeforeValidator(json_object)] = _env("MINT_MCP_SERVERS")
    smtp_host: Text = _env("MINT_SMTP_HOST")
    smtp_port: int | None = _env("MINT_SMTP_PORT")
    encryption_keys: Annotated[tuple[str, ...] | None, BeforeValidator(parse_keys)] = _env(
        "MINT_ENCRYPTION_KEY"
    )
    codec_token: Annotated[str | None, long_token("MINT_CODEC_TOKEN")] = _env("MINT_CODEC_TOKEN")
    codec_origins: Annotated[tuple[str, ...] | None, BeforeValidator(origin_list)] = _env(
        "MINT_CODEC_ORIGINS"
    )
    log_format: Annotated[str | None, BeforeValidator(log_format_name)] = _env("MINT_LOG_FORMAT")
    log_level: Annotated[str | None, BeforeValidator(log_level_name)] = _env("MINT_LOG_LEVEL")
    metrics_port: int | None = _env("MINT_METRICS_PORT")
    metrics_host: Text = _env("MINT_METRICS_HOST")
    metrics_token: Annotated[str | None, long_token("MINT_METRICS_TOKEN")] = _env("MINT_METRICS_TOKEN")
    otlp_endpoint: Text = _env("OTEL_EXPORTER_OTLP_ENDPOINT")
    search_attributes: Annotated[str | None, BeforeValidator(switch)] = _env("MINT_SEARCH_ATTRIBUTES")

    @model_validator(mode="before")
    @classmethod
    def _no_placeholders(cls, environ: Any) -> Any:
        # Before any other check, so that the message says what is wrong (a placeholder is often too short).
        return refuse_placeholders(environ)

    @model_validator(mode="after")
    def _distinct_secrets(self) -> Environment:
        refuse_shared_secrets(self.__dict__)
        return self


def readable(exc: ValidationError) -> ValueError:
    """The first problem as a plain ValueError: our own checks' messages as they are (pydantic's wording
    would quote the input, a secret's too), pydantic's own (numbers only) with the variable's name."""
    error = exc.errors()[0]
    if error["type"] == "value_error":
        return ValueError(str(error["ctx"]["error"]))
    name = error["loc"][0] if error["loc"] else "a setting"
    return ValueError(f"{name}: {error['msg']}, not {error['input']!r}")


BASE_URL_VARIABLE = re.compile(r"^MINT_([A-Z0-9_]+)_BASE_URL$")


def base_urls(environ: Any) -> dict[str, str]:
    """{provider: URL} from every non-empty MINT_<PROVIDER>_BASE_URL (`weather` from MINT_WEATHER_BASE_URL)."""
    found = {}
    for name, value in environ.items():
        match = BASE_URL_VARIABLE.match(name)
        if match and value.strip():
            found[match.group(1).lower()] = value.strip()
    return found
