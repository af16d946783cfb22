"""Users."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter

from api import schemas
from api.deps import Developer, PageDep, StoreDep, checked_id
from api.errors import ERROR_RESPONSES, not_found
from mint.store.docs import DocStore
from mint.store.tables import USERS

router = APIRouter(tags=["users"], responses=ERROR_RESPONSES)


@router.post("/users", status_code=201, response_model=schemas.User)
async def create_user(body: schemas.UserCreate, developer: Developer, store: StoreDep) -> Any:
    return await store.insert(USERS, developer, _values(body))


@router.get("/users", response_model=schemas.ItemList[schemas.User])
async def list_users(developer: Developer, store: StoreDep, page: PageDep) -> Any:
    return {"items": await store.find(USERS, developer, page)}


@router.get("/users/{user_id}", response_model=schemas.User)
async def get_user(user_id: str, developer: Developer, store: StoreDep) -> Any:
    return await _user_or_404(store, developer, user_id)


@router.post("/users/{user_id}", status_code=201, response_model=schemas.User)
async def create_or_update_user(
    user_id: str, body: schemas.UserCreate, developer: Developer, store: StoreDep
) -> Any:
    user_id = checked_id(user_id, "user")
    updated = await store.update(USERS, developer, user_id, _values(body, replace=True))
    return updated or await store.insert(USERS, developer, _values(body), id_=user_id)


@router.put("/users/{user_id}", response_model=schemas.User)
async def reset_user(user_id: str, body: schemas.UserCreate, developer: Developer, store: StoreDep) -> Any:
    user = await _user_or_404(store, developer, user_id)
    return await store.update(USERS, developer, user["id"], _values(body, replace=True))


@router.patch("/users/{user_id}", response_model=schemas.User)
async def patch_user(user_id: str, body: schemas.UserCreate, developer: Developer, store: StoreDep) -> Any:
    user = await _user_or_404(store, developer, user_id)
    values = body.model_dump(exclude_unset=True)
    if "metadata" in values:
        values["metadata"] = {**user["metadata"], **(values["metadata"] or {})}
    return await store.update(USERS, developer, user["id"], values)


@router.delete("/users/{user_id}", response_model=schemas.ResourceDeleted, status_code=202)
async def delete_user(user_id: str, developer: Developer, store: StoreDep) -> Any:
    if not await store.delete(USERS, developer, checked_id(user_id, "user")):
        raise not_found("user", user_id)
    # Docs have no foreign key to their owner (an agent or a user): they go with it here.
    await DocStore(store.pool).delete_matching(developer, "user", checked_id(user_id, "user"), None)
    return {"id": user_id, "deleted_at": datetime.now(UTC)}


async def _user_or_404(store: StoreDep, developer: str, user_id: str) -> dict[str, Any]:
    user = await store.get(USERS, developer, checked_id(user_id, "user"))
    if user is None:
        raise not_found("user", user_id)
    return user


def _values(body: schemas.UserCreate, replace: bool = False) -> dict[str, Any]:
    values = body.model_dump(exclude_unset=not replace)
    values["metadata"] = values.get("metadata") or {}
    return values
