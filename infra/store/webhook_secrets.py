"""Each developer's webhook secret (the webhook_secrets table): made on first read, replaced on rotation."""

from __future__ import annotations

import secrets

import asyncpg

SECRET_PREFIX = "whsec_"


def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_hex(32)


class WebhookSecrets:
    def __init__(self, pool: asyncpg.Pool):
        self.pool = pool

    async def get(self, developer_id: str) -> str:
        """The developer's secret, made now if they have none (two first reads at once agree on one)."""
        query = "SELECT secret FROM webhook_secrets WHERE developer_id = $1"
        secret = await self.pool.fetchval(query, developer_id)
        if secret is None:  # the first read: a read-only upsert would rewrite the row at every read after
            await self.pool.execute(
                "INSERT INTO webhook_secrets (developer_id, secret) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                developer_id,
                new_secret(),
            )
            secret = await self.pool.fetchval(query, developer_id)
        return str(secret)

    async def rotate(self, developer_id: str) -> str:
        """A new secret replaces the developer's; deliveries sent from now on are signed with it."""
        secret = await self.pool.fetchval(
            "INSERT INTO webhook_secrets (developer_id, secret) VALUES ($1, $2) "
            "ON CONFLICT (developer_id) DO UPDATE SET secret = $2, rotated_at = now() RETURNING secret",
            developer_id,
            new_secret(),
        )
        return str(secret)
