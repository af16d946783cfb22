"""Request dependencies: the caller's developer (from the API key), list paging, the clients the services
use."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Annotated, Literal

from fastapi import Depends, Query, Request

from api.errors import ApiError
from api.request_check import reject_unstorable, too_deep_error
from contracts.json import JsonObject
from contracts.records.pages import Page
from services.clients import Clients
from services.tenancy import acting_for, developer_for_key


# Every dependency here is `async def`, though none but get_developer awaits anything: FastAPI runs a plain
# `def` dependency in a worker thread, a thread hop per request (and, on a busy machine, a wait for that
# thread to be scheduled).
async def get_clients(request: Request) -> Clients:
    """The infrastructure a route hands to the service it calls."""
    return _clients(request)


def _clients(request: Request) -> Clients:
    clients: Clients = request.app.state.clients
    return clients


async def get_developer(request: Request) -> AsyncIterator[str]:
    """The developer id for `Authorization: Bearer KEY` (or `X-Auth-Key: KEY`); the rest of the request
    acts for that developer, under row-level security (services/tenancy.py)."""
    header = request.headers.get("authorization", "")
    key = (
        header[7:].strip() if header.lower().startswith("bearer ") else request.headers.get("x-auth-key", "")
    )
    if not key:
        raise ApiError(401, "missing API key: send `Authorization: Bearer YOUR_KEY`")
    developer_id = await developer_for_key(_clients(request), key)
    if developer_id is None:
        raise ApiError(401, "invalid or revoked API key")
    limiter = request.app.state.rate_limiter
    wait = limiter.wait_seconds(key)
    if wait:
        raise ApiError(
            429,
            f"too many requests: this key may make {limiter.per_minute} per minute (MINT_RATE_LIMIT_PER_MINUTE); "
            f"retry in {wait:.1f} s",
            headers={"Retry-After": str(max(1, round(wait)))},
        )
    with acting_for(developer_id):
        yield developer_id


Offset = Annotated[int, Query(ge=0, le=1_000_000_000)]
SortBy = Literal["created_at", "updated_at"]
Direction = Literal["asc", "desc"]


async def get_page(
    request: Request,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Offset = 0,
    sort_by: SortBy = "created_at",
    direction: Direction = "desc",
) -> Page:
    return Page(limit, offset, sort_by, direction, metadata_filter(request))


async def get_transition_page(
    request: Request,
    # Julep v1 read an execution's transitions with any limit, and its cookbooks ask for 2000 at once.
    limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
    offset: Offset = 0,
    sort_by: SortBy = "created_at",
    direction: Direction = "desc",
) -> Page:
    return await get_page(request, limit, offset, sort_by, direction)


def metadata_filter(request: Request) -> JsonObject | None:
    """`?metadata_filter.k=v` (the SDK's form) or `?metadata_filter={"k": "v"}` (JSON)."""
    result: JsonObject = {}
    for key, value in request.query_params.multi_items():
        if key == "metadata_filter":
            result.update(_json_filter(value))
        elif key.startswith("metadata_filter."):
            target = result
            *parents, leaf = key.removeprefix("metadata_filter.").split(".")
            for part in parents:
                inner = target.setdefault(part, {})
                if not isinstance(inner, dict):
                    raise ApiError(422, f"metadata_filter key {key!r} conflicts with another filter key")
                target = inner
            if isinstance(target.get(leaf), dict):
                raise ApiError(422, f"metadata_filter key {key!r} conflicts with another filter key")
            target[leaf] = value
    # Either form can nest deeper than the database's JSON code recurses, or carry JSON escapes of text
    # it cannot store.
    reject_unstorable(result, ("query", "metadata_filter"))
    return result or None


def _json_filter(value: str) -> JsonObject:
    if not value.strip():  # a bare `?metadata_filter=`: no filter, as on Julep
        return {}
    try:
        parsed = json.loads(value)
    except RecursionError:
        raise too_deep_error(value, ("query", "metadata_filter")) from None
    except ValueError:
        raise ApiError(422, "metadata_filter must be a JSON object") from None
    if not isinstance(parsed, dict):
        raise ApiError(422, "metadata_filter must be a JSON object")
    return parsed


Developer = Annotated[str, Depends(get_developer)]
ClientsDep = Annotated[Clients, Depends(get_clients)]
PageDep = Annotated[Page, Depends(get_page)]
TransitionPageDep = Annotated[Page, Depends(get_transition_page)]
