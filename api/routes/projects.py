"""Projects (Julep v1's routers serve these two; its spec's /projects/{id} routes are served by neither)."""

from __future__ import annotations

from fastapi import APIRouter

from api import schemas
from api.deps import ClientsDep, Developer, PageDep
from api.errors import ERROR_RESPONSES
from contracts.records.projects import Project
from services import projects as service

router = APIRouter(tags=["projects"], responses=ERROR_RESPONSES)


@router.post("/projects", status_code=201, response_model=schemas.Project)
async def create_project(body: schemas.ProjectCreate, developer: Developer, clients: ClientsDep) -> Project:
    return await service.create_project(
        clients, developer, body.name, body.canonical_name, body.metadata or {}
    )


@router.get("/projects", response_model=schemas.ItemList[schemas.Project])
async def list_projects(developer: Developer, clients: ClientsDep, page: PageDep) -> dict[str, list[Project]]:
    return {"items": await service.list_projects(clients, developer, page)}
