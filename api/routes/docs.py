"""Docs of agents and users, their search, and /embed (services/docs.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Body, Path, Query, Request

from api import schemas
from api.deps import ClientsDep, Developer, PageDep
from api.errors import ERROR_RESPONSES, ApiError
from api.warning_header import note
from contracts.records.docs import Doc
from services import docs as service
from services.docs import OwnerKind

router = APIRouter(tags=["docs"], responses=ERROR_RESPONSES)
Owner = Annotated[str, Path(description="`agents` or `users`")]


def _owner(owners: str, owner_id: str) -> tuple[OwnerKind, str]:
    """(owner kind, id) for /agents/{id} or /users/{id}."""
    if owners == "agents":
        return "agent", owner_id
    if owners == "users":
        return "user", owner_id
    raise ApiError(404, f"no such route: /{owners}/{owner_id}/...")


def _new(body: schemas.DocCreate) -> service.NewDoc:
    return service.NewDoc(body.title, body.content, body.metadata or {}, body.embed_instruction)


@router.post("/{owners}/{owner_id}/docs", status_code=201, response_model=schemas.Doc)
async def create_doc(
    owners: Owner,
    owner_id: str,
    body: schemas.DocCreate,
    developer: Developer,
    clients: ClientsDep,
    request: Request,
) -> Doc:
    owner = _owner(owners, owner_id)
    queue = request.app.state.settings.task_queue
    return await service.create_doc(clients, queue, developer, owner, _new(body))


@router.post(
    "/{owners}/{owner_id}/docs/import", status_code=201, response_model=schemas.ItemList[schemas.Doc]
)
async def import_docs(
    owners: Owner,
    owner_id: str,
    body: schemas.DocsImport,
    developer: Developer,
    clients: ClientsDep,
    request: Request,
) -> dict[str, list[Doc]]:
    """Many docs in one request (up to 1,000); each is embedded in the background, none is waited for."""
    owner, news = _owner(owners, owner_id), [_new(doc) for doc in body.docs]
    queue = request.app.state.settings.task_queue
    return {"items": await service.import_docs(clients, queue, developer, owner, news)}


@router.get("/{owners}/{owner_id}/docs", response_model=schemas.ItemList[schemas.Doc])
async def list_docs(
    owners: Owner,
    owner_id: str,
    developer: Developer,
    clients: ClientsDep,
    page: PageDep,
    include_embeddings: Annotated[bool, Query()] = True,  # as on Julep
) -> dict[str, list[Doc]]:
    owner = _owner(owners, owner_id)
    return {"items": await service.list_docs(clients, developer, owner, page, include_embeddings)}


@router.delete("/{owners}/{owner_id}/docs/{doc_id}", status_code=202, response_model=schemas.ResourceDeleted)
async def delete_doc(
    owners: Owner, owner_id: str, doc_id: str, developer: Developer, clients: ClientsDep
) -> schemas.ResourceDeleted:
    await service.delete_doc(clients, developer, _owner(owners, owner_id), doc_id)
    return schemas.ResourceDeleted(id=doc_id, deleted_at=datetime.now(UTC))


@router.delete(
    "/{owners}/{owner_id}/docs", status_code=202, response_model=schemas.ItemList[schemas.ResourceDeleted]
)
async def delete_docs(
    owners: Owner,
    owner_id: str,
    developer: Developer,
    clients: ClientsDep,
    body: Annotated[schemas.DocsDelete | None, Body()] = None,
) -> dict[str, list[schemas.ResourceDeleted]]:
    """Delete the docs whose metadata matches `metadata_filter`, or all of them with `delete_all`. Neither
    given (or an empty filter) deletes nothing, as on Julep: `{"items": []}`."""
    body = body or schemas.DocsDelete()
    owner = _owner(owners, owner_id)
    ids = await service.delete_docs(clients, developer, owner, body.metadata_filter, body.delete_all)
    now = datetime.now(UTC)
    return {"items": [schemas.ResourceDeleted(id=i, deleted_at=now) for i in ids]}


@router.get("/docs/{doc_id}", response_model=schemas.Doc)
async def get_doc(doc_id: str, developer: Developer, clients: ClientsDep) -> Doc:
    return await service.get_doc(clients, developer, doc_id)


@router.post("/{owners}/{owner_id}/search", response_model=None)  # its answer is left undeclared in OpenAPI
async def search_docs(
    owners: Owner, owner_id: str, body: schemas.DocSearch, developer: Developer, clients: ClientsDep
) -> dict[str, object]:
    search = service.DocSearch(
        text=body.text,
        vector=body.vector,
        mode=body.mode,
        limit=body.limit,
        metadata_filter=body.metadata_filter,
        confidence=body.confidence,
        alpha=body.alpha,
        fusion=body.fusion,
        mmr_strength=body.mmr_strength,
        k_multiplier=body.k_multiplier,
        include_embeddings=body.include_embeddings,
        lang=body.lang,
    )
    owner = _owner(owners, owner_id)
    found = await service.search(clients, developer, owner, search)
    for warning in found.warnings:
        note(warning)
    return {"docs": [hit.json(search.include_embeddings) for hit in found.hits], "time": found.time}


@router.post("/embed", response_model=None)
async def embed(
    body: schemas.Embed, developer: Developer, clients: ClientsDep
) -> dict[str, list[list[float]]]:
    texts = [body.text] if isinstance(body.text, str) else body.text
    return {"vectors": await service.embed(clients, developer, texts, body.embed_instruction)}
