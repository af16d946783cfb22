"""The checks on the variables that hold secrets: long enough to resist guessing, no example's placeholder
left in, and no one value in two places."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BeforeValidator

from infra.store.crypto import MIN_KEY_CHARS

MAKE_ONE = "try `python -c 'import secrets; print(secrets.token_urlsafe(32))'`"


def long_token(name: str) -> Any:
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


def refuse_placeholders(environ: Any) -> Any:
    """No secret variable may still hold a placeholder (SECRET_VARIABLES, PLACEHOLDER); never quoted."""
    if isinstance(environ, dict):
        for name in SECRET_VARIABLES:
            value = environ.get(name)
            if isinstance(value, str) and PLACEHOLDER.search(value):
                raise ValueError(f"{name} still holds an example's CHANGE-ME placeholder: set a real value")
    return environ


def refuse_shared_secrets(found: Mapping[str, object]) -> None:
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
