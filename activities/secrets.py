"""Secrets at call time: references in an activity's request become values just before the call, and values
become `[secret NAME]` again, in any form, in everything the call returns or raises (workflows/secret_refs.py,
activities/redaction.py)."""

from __future__ import annotations

from typing import TypeVar

from activities.redaction import Redactor
from contracts.calls import SecretScope
from infra.store.crypto import DecryptionError
from infra.store.secrets import SecretStore, SecretsUnavailable
from infra.temporal import errors
from workflows.secret_refs import names_in, substitute

T = TypeVar("T")


async def reveal(
    store: SecretStore, value: T, scope: SecretScope | None, also: dict[str, str] | None = None
) -> tuple[T, Redactor]:
    """`value` with the secret references of `scope` filled in, and the Redactor for what comes back, which
    masks `also` ({name: value}) too. A value without references comes back as it is."""
    if not scope:
        return value, Redactor(also or {})
    names = names_in(value, scope["nonce"])
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
    return substitute(value, scope["nonce"], values), Redactor({**(also or {}), **values})
