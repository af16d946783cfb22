"""Projects: a developer's named groups of agents, users and files (Julep v1's), each with a canonical name
(made from its name when none is given)."""

from __future__ import annotations

from collections.abc import Mapping

from contracts.records.pages import Page
from contracts.records.projects import Project
from infra.store.projects import ProjectStore
from infra.store.rows import Conflict
from services.canonical import canonical_name
from services.clients import Clients
from services.rows import json_fields

NAME_TRIES = 5  # a made canonical name that is taken (one chance in 65,536 a try) is made again


async def create_project(
    clients: Clients, developer: str, name: str, canonical: str | None, fields: Mapping[str, object]
) -> Project:
    """A new project; with no canonical name given, one is made from `name` (made again while taken)."""
    projects = ProjectStore(clients.store.pool)
    metadata = json_fields(fields)
    if canonical:
        return await projects.create(developer, canonical, name, metadata)
    for _ in range(NAME_TRIES - 1):
        try:
            return await projects.create(developer, canonical_name(name, "project"), name, metadata)
        except Conflict:
            continue
    return await projects.create(developer, canonical_name(name, "project"), name, metadata)


async def list_projects(clients: Clients, developer: str, page: Page) -> list[Project]:
    return await ProjectStore(clients.store.pool).find(developer, page)
