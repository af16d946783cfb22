"""The developer's webhook secret, which signs every completion webhook (activities/webhooks.py)."""

from __future__ import annotations

from infra.store.webhook_secrets import WebhookSecrets
from services.clients import Clients


async def webhook_secret(clients: Clients, developer: str) -> str:
    """The developer's secret (made on first read)."""
    return await WebhookSecrets(clients.store.pool).get(developer)


async def rotate_webhook_secret(clients: Clients, developer: str) -> str:
    """A new secret for the developer; webhooks sent from now on (retries included) are signed with it."""
    return await WebhookSecrets(clients.store.pool).rotate(developer)
