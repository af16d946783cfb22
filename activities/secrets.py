"""Secrets at call time: references in an activity's request become values just before the call, and values
become `[secret NAME]` again in everything the call returns or raises (workflows/secret_refs.py)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, quote_plus

from temporalio.exceptions import ApplicationError

from activities import errors
from mint.crypto import DecryptionError
from mint.secrets import SecretStore, SecretsUnavailable
from workflows.secret_refs import names_in, substitute


class Redactor:
    """Takes known secret values (and their URL-encoded forms) out of text and values."""

    def __init__(self, secrets: dict[str, str]):
        forms = {}
        for name, value in secrets.items():
            for form in (value, quote(value, safe=""), quote_plus(value)):
                if form:
                    forms[form] = f"[secret {name}]"
        # Longest first, so a value that contains another is replaced whole.
        self._forms = sorted(forms.items(), key=lambda item: -len(item[0]))

    def text(self, text: str) -> str:
        for form, mask in self._forms:
            text = text.replace(form, mask)
        return text

    def value(self, value: Any) -> Any:
        if not self._forms:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        return value

    def error(self, exc: BaseException) -> ApplicationError:
        """`exc` as an error safe for Temporal history and logs (its cause chain is dropped)."""
        if isinstance(exc, ApplicationError):
            return ApplicationError(self.text(exc.message), type=exc.type, non_retryable=exc.non_retryable)
        return errors.transient(self.text(f"{type(exc).__name__}: {exc}"), type(exc).__name__)


async def reveal(store: SecretStore, request: dict[str, Any]) -> tuple[dict[str, Any], Redactor]:
    """`request` with its secret references filled in (and its `secrets` entry removed), and the Redactor
    for what comes back. A request without references comes back as it is."""
    scope = request.get("secrets")
    if not scope:
        return request, Redactor({})
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
    return substitute(request, scope["nonce"], values), Redactor(values)
