"""Secrets: named values a developer (or one of their agents) keeps for tools and model clients.

Values are sealed with `Cipher` before they reach Postgres and opened only by `reveal`, which the worker's
activities call at the moment they need a value. Nothing else reads them: the API shows a mask, and
workflows carry references (`workflows/secret_refs.py`), never values.
"""

from __future__ import annotations

import re

import asyncpg

from contracts.records.pages import Page
from contracts.records.secrets import Secret, SecretFields
from infra.store import rows
from infra.store.crypto import Cipher
from infra.store.rows import Conflict

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
MASK = "********"
MAX_VALUE_BYTES = 64 * 1024
PURPOSE = "mint secrets"
COLUMNS = "id, developer_id, agent_id, name, description, metadata, created_at, updated_at"


class SecretsUnavailable(Exception):
    """No MINT_ENCRYPTION_KEY is configured, so secrets can be neither stored nor read."""


class SecretStore:
    """Create, list, change and delete secrets (masked), and reveal values for the worker."""

    def __init__(self, pool: asyncpg.Pool, keys: tuple[str, ...]):
        self.pool = pool
        self._cipher = Cipher(keys, PURPOSE) if keys else None

    def _columns(self, fields: SecretFields) -> tuple[object, ...]:
        """(name, description, metadata, sealed value): what create and update write."""
        if self._cipher is None:
            raise SecretsUnavailable("secrets need an encryption key: set MINT_ENCRYPTION_KEY")
        sealed = self._cipher.encrypt(fields.value.encode())
        return fields.name, fields.description, fields.metadata or {}, sealed

    async def create(self, developer_id: str, agent_id: str | None, fields: SecretFields) -> Secret:
        sql = (
            "INSERT INTO secrets (id, developer_id, agent_id, name, description, metadata, sealed_value) "
            f"VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING {COLUMNS}"
        )
        try:
            row = await self.pool.fetchrow(sql, rows.new_id(), developer_id, agent_id, *self._columns(fields))
        except asyncpg.UniqueViolationError:
            raise Conflict(f"a secret named {fields.name!r} already exists here") from None
        return _masked(row)

    async def find(self, developer_id: str, agent_id: str | None, page: Page) -> list[Secret]:
        found = await self.pool.fetch(
            f"SELECT {COLUMNS} FROM secrets WHERE developer_id = $1 AND agent_id IS NOT DISTINCT FROM $2 "
            f"ORDER BY {page.order()} LIMIT $3 OFFSET $4",
            developer_id,
            agent_id,
            page.limit,
            page.offset,
        )
        return [_masked(r) for r in found]

    async def get(self, developer_id: str, agent_id: str | None, id_: str) -> Secret | None:
        row = await self.pool.fetchrow(
            f"SELECT {COLUMNS} FROM secrets "
            "WHERE developer_id = $1 AND agent_id IS NOT DISTINCT FROM $2 AND id = $3",
            developer_id,
            agent_id,
            id_,
        )
        return _masked(row) if row else None

    async def update(
        self, developer_id: str, agent_id: str | None, id_: str, fields: SecretFields
    ) -> Secret | None:
        sql = (
            "UPDATE secrets SET name = $4, description = $5, metadata = $6, sealed_value = $7, "
            "updated_at = now() WHERE developer_id = $1 AND agent_id IS NOT DISTINCT FROM $2 AND id = $3 "
            f"RETURNING {COLUMNS}"
        )
        try:
            row = await self.pool.fetchrow(sql, developer_id, agent_id, id_, *self._columns(fields))
        except asyncpg.UniqueViolationError:
            raise Conflict(f"a secret named {fields.name!r} already exists here") from None
        return _masked(row) if row else None

    async def delete(self, developer_id: str, agent_id: str | None, id_: str) -> bool:
        result: str = await self.pool.execute(
            "DELETE FROM secrets WHERE developer_id = $1 AND agent_id IS NOT DISTINCT FROM $2 AND id = $3",
            developer_id,
            agent_id,
            id_,
        )
        return result != "DELETE 0"

    async def reveal(self, developer_id: str, agent_id: str | None, names: set[str]) -> dict[str, str]:
        """The values of `names` visible to `agent_id`'s calls: the agent's own secret wins over the
        developer's of the same name. Names that do not exist are absent from the answer."""
        if not names:
            return {}
        if self._cipher is None:
            raise SecretsUnavailable("secrets need an encryption key: set MINT_ENCRYPTION_KEY")
        found = await self.pool.fetch(
            "SELECT name, sealed_value FROM secrets WHERE developer_id = $1 AND name = ANY($2::text[]) "
            "AND (agent_id IS NULL OR agent_id = $3) ORDER BY agent_id NULLS FIRST",
            developer_id,
            sorted(names),
            agent_id,
        )
        # Developer secrets come first, so an agent's own secret of the same name overwrites them.
        return {row["name"]: self._cipher.decrypt(row["sealed_value"]).decode() for row in found}


def _masked(row: asyncpg.Record) -> Secret:
    """The secret as it is shown: its value a mask (the row holds none: its columns leave the sealed value out)."""
    fields = rows.record(row)
    return Secret(
        id=rows.text(fields, "id"),
        name=rows.text(fields, "name"),
        value=MASK,
        description=rows.optional_text(fields, "description"),
        metadata=rows.json_object(fields, "metadata"),
        created_at=rows.moment(fields, "created_at"),
        updated_at=rows.moment(fields, "updated_at"),
    )
