"""Users."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter

from api import schemas
from api.deps import ClientsDep, Developer, PageDep
from api.errors import ERROR_RESPONSES
from contracts.records.users import User
from services import users

router = APIRouter(tags=["users"], responses=ERROR_RESPONSES)


@router.post("/users", status_code=201, response_model=schemas.User)
async def create_user(body: schemas.UserCreate, developer: Developer, clients: ClientsDep) -> User:
    return await users.create(clients, developer, body.change())


@router.get("/users", response_model=schemas.ItemList[schemas.User])
async def list_users(developer: Developer, clients: ClientsDep, page: PageDep) -> dict[str, list[User]]:
    return {"items": await users.find(clients, developer, page)}


@router.get("/users/{user_id}", response_model=schemas.User)
async def get_user(user_id: str, developer: Developer, clients: ClientsDep) -> User:
    return await users.get(clients, developer, user_id)


@router.post("/users/{user_id}", status_code=201, response_model=schemas.User)
async def create_or_update_user(
    user_id: str, body: schemas.UserCreate, developer: Developer, clients: ClientsDep
) -> User:
    return await users.create_or_update(clients, developer, user_id, body.change(replace=True))


@router.put("/users/{user_id}", response_model=schemas.User)
async def reset_user(
    user_id: str, body: schemas.UserCreate, developer: Developer, clients: ClientsDep
) -> User:
    return await users.reset(clients, developer, user_id, body.change(replace=True))


@router.patch("/users/{user_id}", response_model=schemas.User)
async def patch_user(
    user_id: str, body: schemas.UserCreate, developer: Developer, clients: ClientsDep
) -> User:
    return await users.patch(clients, developer, user_id, body.change())


@router.delete("/users/{user_id}", response_model=schemas.ResourceDeleted, status_code=202)
async def delete_user(user_id: str, developer: Developer, clients: ClientsDep) -> schemas.ResourceDeleted:
    await users.delete(clients, developer, user_id)
    return schemas.ResourceDeleted(id=user_id, deleted_at=datetime.now(UTC))
