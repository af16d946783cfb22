"""Secrets: `/secrets` for the developer, `/agents/{id}/secrets` for one agent (Julep v1's shapes).

Values go in and never come out: every answer carries a mask. GET /secrets answers a plain JSON array, as
Julep's router does and the `julep` SDK's `secrets.list` expects; GET /agents/{id}/secrets answers {items}, as
Julep's spec says (its router does not mount it, and the SDK has no method for it).
"""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter

from api import schemas
from api.deps import ClientsDep, Developer, PageDep
from api.errors import ERROR_RESPONSES
from contracts.records.secrets import Secret, SecretFields
from services import secrets

router = APIRouter(tags=["secrets"], responses=ERROR_RESPONSES)


def _fields(body: schemas.SecretCreate) -> SecretFields:
    return SecretFields(body.name, body.value, body.description, body.metadata)


@router.post("/secrets", status_code=201, response_model=schemas.Secret)
async def create_secret(body: schemas.SecretCreate, developer: Developer, clients: ClientsDep) -> Secret:
    return await secrets.create(clients, developer, None, _fields(body))


@router.get("/secrets", response_model=list[schemas.Secret])
async def list_secrets(developer: Developer, clients: ClientsDep, page: PageDep) -> list[Secret]:
    return await secrets.find(clients, developer, None, page)


@router.get("/secrets/{secret_id}", response_model=schemas.Secret)
async def get_secret(secret_id: str, developer: Developer, clients: ClientsDep) -> Secret:
    return await secrets.get(clients, developer, None, secret_id)


@router.put("/secrets/{secret_id}", response_model=schemas.Secret)
async def update_secret(
    secret_id: str, body: schemas.SecretCreate, developer: Developer, clients: ClientsDep
) -> Secret:
    return await secrets.update(clients, developer, None, secret_id, _fields(body))


@router.delete("/secrets/{secret_id}", status_code=202, response_model=schemas.ResourceDeleted)
async def delete_secret(secret_id: str, developer: Developer, clients: ClientsDep) -> schemas.ResourceDeleted:
    await secrets.delete(clients, developer, None, secret_id)
    return schemas.ResourceDeleted(id=secret_id, deleted_at=datetime.now(UTC))


@router.post("/agents/{agent_id}/secrets", status_code=201, response_model=schemas.Secret)
async def create_agent_secret(
    agent_id: str, body: schemas.SecretCreate, developer: Developer, clients: ClientsDep
) -> Secret:
    agent = await secrets.owner(clients, developer, agent_id)
    return await secrets.create(clients, developer, agent, _fields(body))


@router.get("/agents/{agent_id}/secrets", response_model=schemas.ItemList[schemas.Secret])
async def list_agent_secrets(
    agent_id: str, developer: Developer, clients: ClientsDep, page: PageDep
) -> dict[str, list[Secret]]:
    agent = await secrets.owner(clients, developer, agent_id)
    return {"items": await secrets.find(clients, developer, agent, page)}


@router.put("/agents/{agent_id}/secrets/{secret_id}", response_model=schemas.Secret)
async def update_agent_secret(
    agent_id: str, secret_id: str, body: schemas.SecretCreate, developer: Developer, clients: ClientsDep
) -> Secret:
    agent = await secrets.owner(clients, developer, agent_id)
    return await secrets.update(clients, developer, agent, secret_id, _fields(body))


@router.delete(
    "/agents/{agent_id}/secrets/{secret_id}", status_code=202, response_model=schemas.ResourceDeleted
)
async def delete_agent_secret(
    agent_id: str, secret_id: str, developer: Developer, clients: ClientsDep
) -> schemas.ResourceDeleted:
    agent = await secrets.owner(clients, developer, agent_id)
    await secrets.delete(clients, developer, agent, secret_id)
    return schemas.ResourceDeleted(id=secret_id, deleted_at=datetime.now(UTC))
