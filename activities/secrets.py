"""Secrets at call time: references in an activity's request become values just before the call, and values
become `[secret NAME]` again, in any form, in everything the call returns or raises (workflows/secret_refs.py,
activities/redaction.py)."""

from __future__ import annotations

from typing import Any

from activities.redaction import Redactor
from infra.store.crypto import DecryptionError
from infra.store.secrets import SecretStore, SecretsUnavailable
from infra.temporal import errors
from workflows.secret_refs import names_in, substitute


async def reveal(
    store: SecretStore, request: dict[str, Any], also: dict[str, str] | None = None
) -> tuple[dict[str, Any], Redactor]:
    """`request` with its secret references filled in (and its `secrets` entry removed), and the Redactor
    for what comes back, which masks `also` ({name: value}) too. A request without references comes back as
    it is."""
    scope = request.get("secrets")
    if not scope:
        return {k: v for k, v in request.items() if k != "secrets"}, Redactor(also or {})
    request = {k: v for k, v in request.items() if k != "secrets"}
    names = names_in(request, scope["nonce"])
    try:
        values = await store.reveal(scope["developer_id"], scope.get("agent_id"), names)
    except (SecretsUnavailable, DecryptionError) as exc:
        raise errors.permanent(f"secrets cannot be read: {exc}", "SecretsUnavailable") from None
    missing = sorted(names - values.keys())
    if missing:
        raise errors.permanent(
            f"no secret named {', '.join(missing)}: create it with POST /secrets (or /agents/{{id}}/secrets)",
            "SecretNotFound",
        )
    return substitute(request, scope["nonce"], values), Redactor({**(also or {}), **values})
