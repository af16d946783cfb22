"""The project a resource names (an agent, a user, a file), looked up the way Julep looks it up: by its
canonical name, in any case."""

from __future__ import annotations

from infra.store.projects import ProjectStore
from services.clients import Clients
from services.errors import NotFound


async def project_named(clients: Clients, developer: str, name: str) -> str:
    """The canonical name, as stored, of the developer's project `name` (in any case); NotFound as Julep's
    ("Project 'x' not found") when the developer has none of that name."""
    found = await ProjectStore(clients.store.pool).canonical(developer, name)
    if found is None:
        raise NotFound("Project", f"'{name}'", "create it first (POST /projects); GET /projects lists yours")
    return found
