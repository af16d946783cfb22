"""Secrets: `/secrets` for the developer, `/agents/{id}/secrets` for one agent (Julep v1's shapes).

Values go in and never come out: every answer carries a mask. GET /secrets answers a plain JSON array, as
Julep's router does and the `julep` SDK's `secrets.list` expects; GET /agents/{id}/secrets answers {items}, as
Julep's spec says (its router does not mount it, and the SDK has no method for it).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request

from api import schemas
from api.deps import Developer, PageDep, StoreDep, checked_id
from api.errors import ERROR_RESPONSES, not_found
from infra.store.secrets import SecretStore
from infra.store.tables import AGENTS

router = APIRouter(tags=["secrets"], responses=ERROR_RESPONSES)


def get_secrets(request: Request) -> SecretStore:
    return request.app.state.secrets


Secrets = Annotated[SecretStore, Depends(get_secrets)]


@router.post("/secrets", status_code=201, response_model=schemas.Secret)
async def create_secret(body: schemas.SecretCreate, developer: Developer, secrets: Secrets) -> Any:
    return await secrets.create(developer, None, body.model_dump())


@router.get("/secrets", response_model=list[schemas.Secret])
async def list_secrets(developer: Developer, secrets: Secrets, page: PageDep) -> Any:
    return await secrets.find(developer, None, page)


@router.get("/secrets/{secret_id}", response_model=schemas.Secret)
async def get_secret(secret_id: str, developer: Developer, secrets: Secrets) -> Any:
    return await _secret_or_404(secrets, developer, None, secret_id)


@router.put("/secrets/{secret_id}", response_model=schemas.Secret)
async def update_secret(
    secret_id: str, body: schemas.SecretCreate, developer: Developer, secrets: Secrets
) -> Any:
    return await _updated(secrets, developer, None, secret_id, body)


@router.delete("/secrets/{secret_id}", status_code=202, response_model=schemas.ResourceDeleted)
async def delete_secret(secret_id: str, developer: Developer, secrets: Secrets) -> Any:
    return await _deleted(secrets, developer, None, secret_id)


@router.post("/agents/{agent_id}/secrets", status_code=201, response_model=schemas.Secret)
async def create_agent_secret(
    agent_id: str, body: schemas.SecretCreate, developer: Developer, store: StoreDep, secrets: Secrets
) -> Any:
    agent = await _agent_or_404(store, developer, agent_id)
    return await secrets.create(developer, agent, body.model_dump())


@router.get("/agents/{agent_id}/secrets", response_model=schemas.ItemList[schemas.Secret])
async def list_agent_secrets(
    agent_id: str, developer: Developer, store: StoreDep, secrets: Secrets, page: PageDep
) -> Any:
    return {"items": await secrets.find(developer, await _agent_or_404(store, developer, agent_id), page)}


@router.put("/agents/{agent_id}/secrets/{secret_id}", response_model=schemas.Secret)
async def update_agent_secret(
    agent_id: str,
    secret_id: str,
    body: schemas.SecretCreate,
    developer: Developer,
    store: StoreDep,
    secrets: Secrets,
) -> Any:
    agent = await _agent_or_404(store, developer, agent_id)
    return await _updated(secrets, developer, agent, secret_id, body)


@router.delete(
    "/agents/{agent_id}/secrets/{secret_id}", status_code=202, response_model=schemas.ResourceDeleted
)
async def delete_agent_secret(
    agent_id: str, secret_id: str, developer: Developer, store: StoreDep, secrets: Secrets
) -> Any:
    return await _deleted(secrets, developer, await _agent_or_404(store, developer, agent_id), secret_id)


async def _agent_or_404(store: StoreDep, developer: str, agent_id: str) -> str:
    if await store.get(AGENTS, developer, checked_id(agent_id, "agent")) is None:
        raise not_found("agent", agent_id)
    return checked_id(agent_id, "agent")


async def _secret_or_404(
    secrets: SecretStore, developer: str, agent: str | None, secret_id: str
) -> dict[str, Any]:
    secret = await secrets.get(developer, agent, checked_id(secret_id, "secret"))
    if secret is None:
        raise not_found("secret", secret_id)
    return secret


async def _updated(
    secrets: SecretStore, developer: str, agent: str | None, secret_id: str, body: schemas.SecretCreate
) -> dict[str, Any]:
    secret = await secrets.update(developer, agent, checked_id(secret_id, "secret"), body.model_dump())
    if secret is None:
        raise not_found("secret", secret_id)
    return secret


async def _deleted(secrets: SecretStore, developer: str, agent: str | None, secret_id: str) -> dict[str, Any]:
    if not await secrets.delete(developer, agent, checked_id(secret_id, "secret")):
        raise not_found("secret", secret_id)
    return {"id": secret_id, "deleted_at": datetime.now(UTC)}
