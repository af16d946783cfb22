"""Projects: a developer's named groups of agents, users and files (Julep v1's), each with a canonical name
(made from its name when none is given)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from contracts.json import JsonObject
from infra.store.projects import ProjectStore
from infra.store.rows import Row, json_object, moment, text
from infra.store.tables import Conflict, Page
from services.canonical import canonical_name
from services.clients import Clients
from services.rows import json_fields

NAME_TRIES = 5  # a made canonical name that is taken (one chance in 65,536 a try) is made again


@dataclass(frozen=True)
class Project:
    id: str
    name: str
    canonical_name: str
    metadata: JsonObject
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, row: Row) -> Project:
        return cls(
            id=text(row, "id"),
            name=text(row, "name"),
            canonical_name=text(row, "canonical_name"),
            metadata=json_object(row, "metadata"),
            created_at=moment(row, "created_at"),
            updated_at=moment(row, "updated_at"),
        )


async def create_project(
    clients: Clients, developer: str, name: str, canonical: str | None, fields: Mapping[str, object]
) -> Project:
    """A new project; with no canonical name given, one is made from `name` (made again while taken)."""
    projects = ProjectStore(clients.store.pool)
    metadata = json_fields(fields)
    if canonical:
        return Project.of(await projects.create(developer, canonical, name, metadata))
    for _ in range(NAME_TRIES - 1):
        try:
            return Project.of(
                await projects.create(developer, canonical_name(name, "project"), name, metadata)
            )
        except Conflict:
            continue
    return Project.of(await projects.create(developer, canonical_name(name, "project"), name, metadata))


async def list_projects(clients: Clients, developer: str, page: Page) -> list[Project]:
    return [Project.of(row) for row in await ProjectStore(clients.store.pool).find(developer, page)]
