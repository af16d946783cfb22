"""Docs of agents and users, their search, and /embed."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Query, Request

from api import docs as service
from api import schemas
from api.deps import Developer, PageDep, StoreDep, checked_id
from api.errors import ERROR_RESPONSES, ApiError, not_found
from infra.store.docs import DocStore
from infra.store.tables import AGENTS, USERS

router = APIRouter(tags=["docs"], responses=ERROR_RESPONSES)
Owner = Annotated[str, Path(description="`agents` or `users`")]


async def _owner(store: StoreDep, developer: str, owners: str, owner_id: str) -> tuple[str, str]:
    """(owner type, id) for /agents/{id} or /users/{id}; 404 unless it is the caller's."""
    if owners not in ("agents", "users"):
        raise ApiError(404, f"no such route: /{owners}/{owner_id}/...")
    kind = "agent" if owners == "agents" else "user"
    row = await store.get(AGENTS if kind == "agent" else USERS, developer, checked_id(owner_id, kind))
    if row is None:
        raise not_found(kind, owner_id)
    return kind, row["id"]


def _docs(request: Request) -> DocStore:
    return request.app.state.docs


@router.post("/{owners}/{owner_id}/docs", status_code=201, response_model=schemas.Doc)
async def create_doc(
    owners: Owner,
    owner_id: str,
    body: schemas.DocCreate,
    developer: Developer,
    store: StoreDep,
    request: Request,
) -> Any:
    owner = await _owner(store, developer, owners, owner_id)
    state = request.app.state
    return await service.create_doc(
        state.docs, state.temporal, state.settings.task_queue, developer, owner, body
    )


@router.post(
    "/{owners}/{owner_id}/docs/import", status_code=201, response_model=schemas.ItemList[schemas.Doc]
)
async def import_docs(
    owners: Owner,
    owner_id: str,
    body: schemas.DocsImport,
    developer: Developer,
    store: StoreDep,
    request: Request,
) -> Any:
    """Many docs in one request (up to 1,000); each is embedded in the background, none is waited for."""
    owner = await _owner(store, developer, owners, owner_id)
    state = request.app.state
    created = await service.import_docs(
        state.docs, state.temporal, state.settings.task_queue, developer, owner, body.docs
    )
    return {"items": created}


@router.get("/{owners}/{owner_id}/docs", response_model=schemas.ItemList[schemas.Doc])
async def list_docs(
    owners: Owner,
    owner_id: str,
    developer: Developer,
    store: StoreDep,
    page: PageDep,
    request: Request,
    include_embeddings: Annotated[bool, Query()] = True,  # as on Julep
) -> Any:
    kind, owner = await _owner(store, developer, owners, owner_id)
    return {"items": await _docs(request).find(developer, kind, owner, page, include_embeddings)}


@router.delete("/{owners}/{owner_id}/docs/{doc_id}", status_code=202, response_model=schemas.ResourceDeleted)
async def delete_doc(
    owners: Owner, owner_id: str, doc_id: str, developer: Developer, store: StoreDep, request: Request
) -> Any:
    kind, owner = await _owner(store, developer, owners, owner_id)
    if not await _docs(request).delete(developer, kind, owner, checked_id(doc_id, "doc")):
        raise not_found("doc", doc_id)
    return {"id": doc_id, "deleted_at": datetime.now(UTC)}


@router.delete(
    "/{owners}/{owner_id}/docs", status_code=202, response_model=schemas.ItemList[schemas.ResourceDeleted]
)
async def delete_docs(
    owners: Owner,
    owner_id: str,
    developer: Developer,
    store: StoreDep,
    request: Request,
    body: Annotated[schemas.DocsDelete | None, Body()] = None,
) -> Any:
    """Delete the docs whose metadata matches `metadata_filter`, or all of them with `delete_all`. Neither
    given (or an empty filter) deletes nothing, as on Julep: `{"items": []}`."""
    kind, owner = await _owner(store, developer, owners, owner_id)
    body = body or schemas.DocsDelete()
    if not body.delete_all and not body.metadata_filter:
        return {"items": []}
    ids = await _docs(request).delete_matching(
        developer, kind, owner, None if body.delete_all else body.metadata_filter
    )
    now = datetime.now(UTC)
    return {"items": [{"id": i, "deleted_at": now} for i in ids]}


@router.get("/docs/{doc_id}", response_model=schemas.Doc)
async def get_doc(doc_id: str, developer: Developer, request: Request) -> Any:
    doc = await _docs(request).get(developer, checked_id(doc_id, "doc"))
    if doc is None:
        raise not_found("doc", doc_id)
    return doc


@router.post("/{owners}/{owner_id}/search")
async def search_docs(
    owners: Owner,
    owner_id: str,
    body: schemas.DocSearch,
    developer: Developer,
    store: StoreDep,
    request: Request,
) -> Any:
    _, owner = await _owner(store, developer, owners, owner_id)
    return await service.search(_docs(request), request.app.state.embedders, developer, [owner], body)


@router.post("/embed")
async def embed(body: schemas.Embed, developer: Developer, request: Request) -> Any:
    texts = [body.text] if isinstance(body.text, str) else body.text
    embedder = await request.app.state.embedders.of(developer)
    return {"vectors": await embedder.embed(texts, body.embed_instruction)}
