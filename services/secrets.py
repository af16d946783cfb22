"""Secrets, the developer's or one agent's: the value goes in sealed, and only a mask comes out."""

from __future__ import annotations

from contracts.records.pages import Page
from contracts.records.secrets import Secret, SecretFields
from infra.store.tables import AGENTS
from services.clients import Clients
from services.errors import NotFound
from services.ids import checked_id


async def owner(clients: Clients, developer: str, agent_id: str | None) -> str | None:
    """Whose secrets a request reaches: the agent's (its id as stored, once it is known to be the developer's),
    or the developer's own (None)."""
    if agent_id is None:
        return None
    if await clients.store.get(AGENTS, developer, checked_id(agent_id, "agent")) is None:
        raise NotFound("agent", agent_id)
    return checked_id(agent_id, "agent")


async def create(clients: Clients, developer: str, agent: str | None, fields: SecretFields) -> Secret:
    return await clients.secrets.create(developer, agent, fields)


async def find(clients: Clients, developer: str, agent: str | None, page: Page) -> list[Secret]:
    return await clients.secrets.find(developer, agent, page)


async def get(clients: Clients, developer: str, agent: str | None, secret_id: str) -> Secret:
    secret = await clients.secrets.get(developer, agent, checked_id(secret_id, "secret"))
    if secret is None:
        raise NotFound("secret", secret_id)
    return secret


async def update(
    clients: Clients, developer: str, agent: str | None, secret_id: str, fields: SecretFields
) -> Secret:
    secret = await clients.secrets.update(developer, agent, checked_id(secret_id, "secret"), fields)
    if secret is None:
        raise NotFound("secret", secret_id)
    return secret


async def delete(clients: Clients, developer: str, agent: str | None, secret_id: str) -> None:
    if not await clients.secrets.delete(developer, agent, checked_id(secret_id, "secret")):
        raise NotFound("secret", secret_id)
