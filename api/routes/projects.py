"""Projects (Julep v1's routers serve these two; its spec's /projects/{id} routes are served by neither), and
the lookup of the project a resource names."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from api import schemas
from api.canonical import canonical_name
from api.deps import Developer, PageDep, StoreDep
from api.errors import ERROR_RESPONSES, ApiError
from infra.store.projects import ProjectStore
from infra.store.tables import Conflict, Store

router = APIRouter(tags=["projects"], responses=ERROR_RESPONSES)
NAME_TRIES = 5  # a made canonical name that is taken (one chance in 65,536 a try) is made again


@router.post("/projects", status_code=201, response_model=schemas.Project)
async def create_project(body: schemas.ProjectCreate, developer: Developer, store: StoreDep) -> Any:
    projects = ProjectStore(store.pool)
    metadata = body.metadata or {}
    if body.canonical_name:
        return await projects.create(developer, body.canonical_name, body.name, metadata)
    for _ in range(NAME_TRIES - 1):
        try:
            return await projects.create(developer, canonical_name(body.name, "project"), body.name, metadata)
        except Conflict:
            continue
    return await projects.create(developer, canonical_name(body.name, "project"), body.name, metadata)


@router.get("/projects", response_model=schemas.ItemList[schemas.Project])
async def list_projects(developer: Developer, store: StoreDep, page: PageDep) -> Any:
    return {"items": await ProjectStore(store.pool).find(developer, page)}


async def project_or_404(store: Store, developer: str, name: str) -> str:
    """The canonical name, as stored, of the developer's project `name` (in any case); a 404 as Julep's
    ("Project 'x' not found") when the developer has none of that name."""
    found = await ProjectStore(store.pool).canonical(developer, name)
    if found is None:
        raise ApiError(
            404,
            f"Project '{name}' not found: create it first (POST /projects); GET /projects lists yours",
        )
    return found
