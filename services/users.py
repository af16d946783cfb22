"""Users: the people a developer's sessions talk with, each in a project."""

from __future__ import annotations

from typing_extensions import TypedDict

from contracts.json import JsonObject
from contracts.records.pages import Page
from contracts.records.users import User
from infra.store.projects import DEFAULT
from infra.store.tables import USERS
from services.clients import Clients
from services.errors import NotFound
from services.ids import checked_id
from services.project_names import project_named


class UserChange(TypedDict, total=False):
    """What a request gives a user (a key left out is left as it is, where the request changes one)."""

    name: str | None
    about: str | None
    project: str | None
    metadata: JsonObject | None


async def create(clients: Clients, developer: str, change: UserChange) -> User:
    values = await _values(clients, developer, change)
    return await clients.store.insert(USERS, developer, values)


async def find(clients: Clients, developer: str, page: Page) -> list[User]:
    return await clients.store.find(USERS, developer, page)


async def get(clients: Clients, developer: str, user_id: str) -> User:
    """The developer's user with this id; NotFound otherwise."""
    user = await clients.store.get(USERS, developer, checked_id(user_id, "user"))
    if user is None:
        raise NotFound("user", user_id)
    return user


async def create_or_update(clients: Clients, developer: str, user_id: str, change: UserChange) -> User:
    """Julep's create-or-update: the whole user replaced, or created with this id."""
    user_id = checked_id(user_id, "user")
    values = await _values(clients, developer, change)
    updated = await clients.store.update(USERS, developer, user_id, values)
    if updated is not None:
        return updated
    return await clients.store.insert(USERS, developer, values, id_=user_id)


async def reset(clients: Clients, developer: str, user_id: str, change: UserChange) -> User:
    """The whole user replaced."""
    user = await get(clients, developer, user_id)
    return await _updated(clients, developer, user, await _values(clients, developer, change))


async def patch(clients: Clients, developer: str, user_id: str, change: UserChange) -> User:
    """The keys given changed; metadata merged into the user's."""
    user = await get(clients, developer, user_id)
    values = await _in_project(clients, developer, dict(change), None)
    if "metadata" in values:
        given = values["metadata"]
        values["metadata"] = {**user.metadata, **(given if isinstance(given, dict) else {})}
    return await _updated(clients, developer, user, values)


async def delete(clients: Clients, developer: str, user_id: str) -> None:
    """The user gone, with its docs (they have no foreign key to their owner, an agent or a user)."""
    if not await clients.store.delete(USERS, developer, checked_id(user_id, "user")):
        raise NotFound("user", user_id)
    await clients.docs.delete_matching(developer, "user", checked_id(user_id, "user"), None)


async def _updated(clients: Clients, developer: str, user: User, values: dict[str, object]) -> User:
    updated = await clients.store.update(USERS, developer, user.id, values)
    if updated is None:  # deleted meanwhile
        raise NotFound("user", user.id)
    return updated


async def _values(clients: Clients, developer: str, change: UserChange) -> dict[str, object]:
    values: dict[str, object] = dict(change)
    values["metadata"] = values.get("metadata") or {}
    return await _in_project(clients, developer, values, DEFAULT)


async def _in_project(
    clients: Clients, developer: str, values: dict[str, object], default: str | None
) -> dict[str, object]:
    """The values with the project they name checked to exist (Julep's 404) and named as stored. Naming
    none, the user goes into `default` if given (Julep's create, create-or-update and PUT put it in the
    developer's `default`) and otherwise stays where it is (PATCH: Julep moved it to `default` too)."""
    named = values.pop("project", None) or default
    if isinstance(named, str) and named:
        values["project"] = await project_named(clients, developer, named)
    return values
