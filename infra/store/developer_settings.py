"""A developer's embedding model (PUT /developer/settings), in the developer_settings table whose default
budget infra.store.budgets keeps."""

from __future__ import annotations

import asyncpg


class DeveloperEmbedding:
    def __init__(self, pool: asyncpg.Pool):
        self.pool = pool

    async def get(self, developer_id: str) -> tuple[str, int | None] | None:
        """The developer's (model, dimensions), or None for the server's."""
        row = await self.pool.fetchrow(
            "SELECT embedding_model, embedding_dimensions FROM developer_settings WHERE developer_id = $1",
            developer_id,
        )
        if row is None or row["embedding_model"] is None:
            return None
        return row["embedding_model"], row["embedding_dimensions"]

    async def set(self, developer_id: str, model: str | None, dimensions: int | None) -> None:
        await self.pool.execute(
            "INSERT INTO developer_settings (developer_id, embedding_model, embedding_dimensions) "
            "VALUES ($1, $2, $3) ON CONFLICT (developer_id) DO UPDATE "
            "SET embedding_model = $2, embedding_dimensions = $3, updated_at = now()",
            developer_id,
            model,
            dimensions,
        )
