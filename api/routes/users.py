"""Users."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter

from api import schemas
from api.deps import Developer, PageDep, StoreDep, checked_id
from api.errors import ERROR_RESPONSES, not_found
from api.routes.projects import project_or_404
from infra.store.docs import DocStore
from infra.store.projects import DEFAULT
from infra.store.tables import USERS

router = APIRouter(tags=["users"], responses=ERROR_RESPONSES)


@router.post("/users", status_code=201, response_model=schemas.User)
async def create_user(body: schemas.UserCreate, developer: Developer, store: StoreDep) -> Any:
    return await store.insert(USERS, developer, await _values(store, developer, body))


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
    values = await _values(store, developer, body, replace=True)
    updated = await store.update(USERS, developer, user_id, values)
    return updated or await store.insert(USERS, developer, values, id_=user_id)


@router.put("/users/{user_id}", response_model=schemas.User)
async def reset_user(user_id: str, body: schemas.UserCreate, developer: Developer, store: StoreDep) -> Any:
    user = await _user_or_404(store, developer, user_id)
    return await store.update(USERS, developer, user["id"], await _values(store, developer, body, True))


@router.patch("/users/{user_id}", response_model=schemas.User)
async def patch_user(user_id: str, body: schemas.UserCreate, developer: Developer, store: StoreDep) -> Any:
    user = await _user_or_404(store, developer, user_id)
    values = await _in_project(store, developer, body.model_dump(exclude_unset=True), None)
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


async def _values(
    store: StoreDep, developer: str, body: schemas.UserCreate, replace: bool = False
) -> dict[str, Any]:
    values = body.model_dump(exclude_unset=not replace)
    values["metadata"] = values.get("metadata") or {}
    return await _in_project(store, developer, values, DEFAULT)


async def _in_project(
    store: StoreDep, developer: str, values: dict[str, Any], default: str | None
) -> dict[str, Any]:
    """The values with the project they name checked to exist (Julep's 404) and named as stored. Naming
    none, the user goes into `default` if given (Julep's create, create-or-update and PUT put it in the
    developer's `default`) and otherwise stays where it is (PATCH: Julep moved it to `default` too)."""
    named = values.pop("project", None) or default
    if named:
        values["project"] = await project_or_404(store, developer, named)
    return values
