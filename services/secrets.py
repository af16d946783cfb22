"""Secrets, the developer's or one agent's: the value goes in sealed, and only a mask comes out."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from contracts.json import JsonObject
from infra.store import rows
from infra.store.tables import AGENTS
from services.clients import Clients
from services.errors import NotFound
from services.ids import checked_id
from services.pages import Page


@dataclass(frozen=True)
class SecretFields:
    name: str
    value: str
    description: str | None
    metadata: JsonObject | None

    def columns(self) -> dict[str, object]:
        return {
            "name": self.name,
            "value": self.value,
            "description": self.description,
            "metadata": self.metadata,
        }


@dataclass(frozen=True)
class Secret:
    id: str
    name: str
    value: str  # always the mask
    description: str | None
    metadata: JsonObject
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, row: rows.Row) -> Secret:
        return cls(
            id=rows.text(row, "id"),
            name=rows.text(row, "name"),
            value=rows.text(row, "value"),
            description=rows.optional_text(row, "description"),
            metadata=rows.json_object(row, "metadata"),
            created_at=rows.moment(row, "created_at"),
            updated_at=rows.moment(row, "updated_at"),
        )


async def owner(clients: Clients, developer: str, agent_id: str | None) -> str | None:
    """Whose secrets a request reaches: the agent's (its id as stored, once it is known to be the developer's),
    or the developer's own (None)."""
    if agent_id is None:
        return None
    if await clients.store.get(AGENTS, developer, checked_id(agent_id, "agent")) is None:
        raise NotFound("agent", agent_id)
    return checked_id(agent_id, "agent")


async def create(clients: Clients, developer: str, agent: str | None, fields: SecretFields) -> Secret:
    return Secret.of(await clients.secrets.create(developer, agent, fields.columns()))


async def find(clients: Clients, developer: str, agent: str | None, page: Page) -> list[Secret]:
    return [Secret.of(row) for row in await clients.secrets.find(developer, agent, page)]


async def get(clients: Clients, developer: str, agent: str | None, secret_id: str) -> Secret:
    secret = await clients.secrets.get(developer, agent, checked_id(secret_id, "secret"))
    if secret is None:
        raise NotFound("secret", secret_id)
    return Secret.of(secret)


async def update(
    clients: Clients, developer: str, agent: str | None, secret_id: str, fields: SecretFields
) -> Secret:
    secret = await clients.secrets.update(developer, agent, checked_id(secret_id, "secret"), fields.columns())
    if secret is None:
        raise NotFound("secret", secret_id)
    return Secret.of(secret)


async def delete(clients: Clients, developer: str, agent: str | None, secret_id: str) -> None:
    if not await clients.secrets.delete(developer, agent, checked_id(secret_id, "secret")):
        raise NotFound("secret", secret_id)
