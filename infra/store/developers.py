"""Developers (tenants) and their API keys: only a key's hash is kept."""

from __future__ import annotations

import secrets

from infra.store.rows import PoolUser, hash_key, new_id
from infra.store.tenancy import ANY_TENANT, acting_as


class Developers(PoolUser):
    async def create_developer(self, name: str, key: str | None = None) -> tuple[str, str]:
        """Create a developer with one API key; return (developer id, key). The key is shown only here."""
        developer_id = new_id()
        key = key or "mint_" + secrets.token_urlsafe(32)
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute("INSERT INTO developers (id, name) VALUES ($1, $2)", developer_id, name)
            await conn.execute(
                "INSERT INTO api_keys (id, developer_id, key_hash, prefix) VALUES ($1, $2, $3, $4)",
                new_id(),
                developer_id,
                hash_key(key),
                key[:9],
            )
        return developer_id, key

    async def add_key(self, developer_id: str) -> str:
        """A new API key for an existing developer (shown only here); the developer's other keys go on working."""
        key = "mint_" + secrets.token_urlsafe(32)
        await self.pool.execute(
            "INSERT INTO api_keys (id, developer_id, key_hash, prefix) VALUES ($1, $2, $3, $4)",
            new_id(),
            developer_id,
            hash_key(key),
            key[:9],
        )
        return key

    async def revoke_key(self, key: str) -> bool:
        """Revoke a key (given whole): it stops working at once. False if no live key matches."""
        result: str = await self.pool.execute(
            "UPDATE api_keys SET revoked_at = now() WHERE key_hash = $1 AND revoked_at IS NULL", hash_key(key)
        )
        return result != "UPDATE 0"

    async def ensure_developer_key(self, name: str, key: str) -> str:
        """The developer that owns `key`, creating it if the key is new (used by `mint up`)."""
        found = await self.developer_for_key(key)
        if found:
            return found
        developer_id, _ = await self.create_developer(name, key)
        return developer_id

    async def developer_for_key(self, key: str) -> str | None:
        """The developer whose live key this is, or None; read on any pooled connection as it is (no switch
        of tenant: infra/store/tenancy.py ANY_TENANT)."""
        with acting_as(ANY_TENANT):
            found = await self.pool.fetchval("SELECT mint_developer_for_key($1)", hash_key(key))
        return str(found) if found is not None else None
