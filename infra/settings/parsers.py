"""How an environment variable's text becomes a setting's value, each parser naming its variable when the
text is wrong (infra/settings/environment.py applies them)."""

from __future__ import annotations

import json

from contracts.json import JsonObject
from contracts.temporal import QUEUE_KINDS, WORKFLOWS_KIND


def optional_text(raw: str) -> str | None:
    return raw or None


def name_list(raw: str) -> tuple[str, ...]:
    """`a, b,c` as ("a", "b", "c")."""
    return tuple(item.strip() for item in raw.split(",") if item.strip())


def positive_seconds(raw: str) -> float:
    name = "MINT_MAX_TOOL_TIMEOUT_SECONDS"
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number of seconds, not {raw!r}") from None
    if not 0 < value < float("inf"):
        raise ValueError(f"{name} must be more than 0 (and finite), not {raw!r}")
    return value


def budget_share(raw: str) -> float | None:
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


def json_object(raw: str) -> JsonObject:
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


def log_format_name(raw: str) -> str | None:
    if raw and raw.lower() not in ("plain", "json"):
        raise ValueError(f"MINT_LOG_FORMAT must be plain or json, not {raw!r}")
    return raw.lower() or None


def log_level_name(raw: str) -> str | None:
    if raw and raw.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        raise ValueError(f"MINT_LOG_LEVEL must be DEBUG, INFO, WARNING or ERROR, not {raw!r}")
    return raw.upper() or None


def origin_list(raw: str) -> tuple[str, ...]:
    """`http://127.0.0.1:8233,http://localhost:8233`: origins compare exactly, so no trailing slash."""
    return tuple(o.rstrip("/") for o in name_list(raw))


def parse_queue_kinds(raw: str, name: str = "MINT_WORKER_QUEUES") -> tuple[str, ...]:
    """MINT_WORKER_QUEUES (or `mint worker --queues`): `workflows,models,http,writes` or some of them."""
    kinds = name_list(raw)
    unknown = [k for k in kinds if k not in (WORKFLOWS_KIND, *QUEUE_KINDS)]
    if unknown or not kinds:
        what = f"unknown queue {unknown[0]!r}" if unknown else "no queue named"
        raise ValueError(f"{name}: {what}; the queues are {', '.join((WORKFLOWS_KIND, *QUEUE_KINDS))}")
    return kinds


def queue_kinds(raw: str) -> tuple[str, ...] | None:
    return parse_queue_kinds(raw) if raw.strip() else None


# Past any real worker, and within what the Temporal SDK's slot counts hold (a larger number failed to start).
MAX_WORKER_SLOTS = 1_000_000


def worker_slots(raw: str) -> int | None:
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


def tls_flag(raw: str) -> bool | None:
    """TEMPORAL_TLS: true or false (1/0, yes/no, on/off; empty: unset), as Temporal's CLI reads it."""
    value = raw.strip().lower()
    if not value:
        return None
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"TEMPORAL_TLS must be true or false, not {raw!r}")


def switch(raw: str) -> str | None:
    """MINT_SEARCH_ATTRIBUTES: `auto`, `on` or `off` (empty: unset)."""
    value = raw.strip().lower()
    if value and value not in ("auto", "on", "off"):
        raise ValueError(f"MINT_SEARCH_ATTRIBUTES must be auto, on or off, not {raw!r}")
    return value or None


def endpoint_list(raw: str) -> tuple[tuple[str, str], ...]:
    """`ollama=http://127.0.0.1:11434/v1,vllm=http://gpu:8000/v1` as ((name, base URL), ...)."""
    pairs = []
    for item in raw.split(","):
        name, _, url = item.strip().partition("=")
        if name and url:
            pairs.append((name.strip(), url.strip()))
    return tuple(pairs)
