"""Docs of agents and users: creating them (stored, then embedded in a workflow), listing, deleting and
searching them, and embedding text."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from temporalio.common import WorkflowIDReusePolicy

from contracts.background import DocRef, IndexedDoc
from contracts.liveness import WORKFLOW_TASK_TIMEOUT
from contracts.records.docs import Doc, SearchHit
from contracts.records.pages import Page
from contracts.temporal import INDEX_DOC_WORKFLOW, tenant_priority
from infra.store.docs import SUPPORTED_DIMENSIONS, DocStore, SearchQuery
from infra.store.tables import AGENTS, USERS, Store
from services.clients import Clients
from services.errors import Invalid, NotFound
from services.ids import checked_id
from services.rows import json_fields
from workflows.problems import Problem

# A create waits this long for its embeddings, so a doc is usually searchable by meaning as soon as the
# create returns; a slower one answers `pending` and finishes in the background.
INDEX_WAIT_SECONDS = 20.0
IMPORT_CONCURRENCY = 8  # workflow starts in flight at once for an import (each holds a pool connection after)

OwnerKind = Literal["agent", "user"]


@dataclass(frozen=True)
class NewDoc:
    title: str
    content: str | list[str]
    metadata: Mapping[str, object] = field(default_factory=dict)
    embed_instruction: str | None = None


@dataclass(frozen=True)
class DocSearch:
    """Julep's text, vector and hybrid search bodies in one; `mode` lets Mint embed `text` itself."""

    text: str | None = None
    vector: list[float] | None = None
    mode: Literal["text", "vector", "hybrid"] | None = None
    limit: int = 10
    metadata_filter: Mapping[str, object] | None = None
    confidence: float = 0.5
    alpha: float = 0.5
    fusion: str = "rrf"
    mmr_strength: float = 0.5
    k_multiplier: int = 5
    include_embeddings: bool = True
    lang: str = "en-US"


@dataclass(frozen=True)
class Found:
    """A search's answer: the docs found (each by its best snippet), how long it took, and what the caller
    should be told of how the request was read."""

    hits: list[SearchHit]
    time: float
    warnings: list[str]


async def owner_of(store: Store, developer: str, kind: OwnerKind, owner_id: str) -> str:
    """The id of the developer's agent or user `owner_id`; NotFound unless it is the caller's."""
    stored_id = checked_id(owner_id, kind)
    if kind == "agent":
        agent = await store.get(AGENTS, developer, stored_id)
        found = None if agent is None else agent.id
    else:
        user = await store.get(USERS, developer, stored_id)
        found = None if user is None else user.id
    if found is None:
        raise NotFound(kind, owner_id)
    return found


async def create_doc(
    clients: Clients,
    task_queue: str,
    developer: str,
    owner: tuple[OwnerKind, str],
    new: NewDoc,
    wait: float = INDEX_WAIT_SECONDS,
) -> Doc:
    """Store the doc and its chunks (searchable by text at once), then embed them in a workflow."""
    kind, owner_id = owner[0], await owner_of(clients.store, developer, *owner)
    doc = await _store(clients.docs, developer, kind, owner_id, new)
    await index(clients, task_queue, developer, doc.id, wait)
    return await clients.docs.get(developer, doc.id) or doc


async def import_docs(
    clients: Clients, task_queue: str, developer: str, owner: tuple[OwnerKind, str], news: list[NewDoc]
) -> list[Doc]:
    """Many docs: stored in order (a bad one stops the import there), then their indexing started a few at a
    time, not waited for. (Started one by one, the workflow starts of a 1,000-doc import took over a minute.)"""
    kind, owner_id = owner[0], await owner_of(clients.store, developer, *owner)
    limit = asyncio.Semaphore(IMPORT_CONCURRENCY)

    async def start_indexing(doc: Doc) -> Doc:
        async with limit:
            await index(clients, task_queue, developer, doc.id, wait=0)
            return await clients.docs.get(developer, doc.id) or doc

    created: list[Doc] = []
    try:
        for new in news:
            created.append(await _store(clients.docs, developer, kind, owner_id, new))
    finally:  # the docs stored before a bad one are kept, so they get indexed too
        indexed = await asyncio.gather(*map(start_indexing, created))
    return list(indexed)


async def _store(docs: DocStore, developer: str, kind: OwnerKind, owner_id: str, new: NewDoc) -> Doc:
    metadata = json_fields(new.metadata)
    return await docs.create(
        developer, kind, owner_id, new.title, new.content, metadata, new.embed_instruction
    )


def index_workflow_id(doc_id: str) -> str:
    """The id of the workflow that embeds a doc's chunks (started again, under the same id, to redo it)."""
    return f"index-doc-{doc_id}"


async def index(clients: Clients, task_queue: str, developer: str, doc_id: str, wait: float) -> None:
    try:
        handle = await clients.temporal.start_workflow(
            INDEX_DOC_WORKFLOW,
            DocRef(developer_id=developer, doc_id=doc_id),
            result_type=IndexedDoc,
            id=index_workflow_id(doc_id),
            task_queue=task_queue,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
            task_timeout=WORKFLOW_TASK_TIMEOUT,  # a lost worker costs seconds (contracts/liveness.py)
            priority=tenant_priority(developer),
        )
    except Exception as exc:  # the doc must never look as if it will be indexed when nothing will do it
        await clients.docs.mark_failed(developer, doc_id, f"could not start indexing: {exc}")
        return
    if wait > 0:
        try:
            await asyncio.wait_for(handle.result(), wait)
        except Exception:
            pass  # still running (or failed, which the doc now says): the doc's status tells the caller


async def list_docs(
    clients: Clients, developer: str, owner: tuple[OwnerKind, str], page: Page, include_embeddings: bool
) -> list[Doc]:
    owner_id = await owner_of(clients.store, developer, *owner)
    return await clients.docs.find(developer, owner[0], owner_id, page, include_embeddings)


async def get_doc(clients: Clients, developer: str, doc_id: str) -> Doc:
    found = await clients.docs.get(developer, checked_id(doc_id, "doc"))
    if found is None:
        raise NotFound("doc", doc_id)
    return found


async def delete_doc(clients: Clients, developer: str, owner: tuple[OwnerKind, str], doc_id: str) -> None:
    owner_id = await owner_of(clients.store, developer, *owner)
    if not await clients.docs.delete(developer, owner[0], owner_id, checked_id(doc_id, "doc")):
        raise NotFound("doc", doc_id)


async def delete_docs(
    clients: Clients,
    developer: str,
    owner: tuple[OwnerKind, str],
    metadata_filter: Mapping[str, object] | None,
    delete_all: bool,
) -> list[str]:
    """The ids of the docs deleted: those whose metadata matches `metadata_filter`, or all with `delete_all`.
    Neither (or an empty filter) deletes nothing, as on Julep."""
    owner_id = await owner_of(clients.store, developer, *owner)
    if not delete_all and not metadata_filter:
        return []
    matching = None if delete_all or metadata_filter is None else json_fields(metadata_filter)
    return await clients.docs.delete_matching(developer, owner[0], owner_id, matching)


async def embed(
    clients: Clients, developer: str, texts: list[str], instruction: str | None
) -> list[list[float]]:
    """The texts embedded by the developer's embedding model."""
    embedder = await clients.embedders.of(developer)
    return await embedder.embed(texts, instruction)


async def search(clients: Clients, developer: str, owner: tuple[OwnerKind, str], request: DocSearch) -> Found:
    """Julep's three request shapes: `text` alone is a text search, `vector` alone a vector search, both a
    hybrid one; `mode` asks Mint to embed `text` itself for a vector or hybrid search. A vector finds the
    chunks embedded in as many numbers as it has."""
    owner_id = await owner_of(clients.store, developer, *owner)
    started = time.perf_counter()
    mode = request.mode or (
        "hybrid" if request.text and request.vector else "vector" if request.vector else "text"
    )
    warnings: list[str] = []
    vector = request.vector
    if mode in ("vector", "hybrid"):
        vector = await _query_vector(clients, developer, request, mode, warnings)
    if mode in ("text", "hybrid") and not request.text:
        raise Invalid(f"a {mode} search needs `text`")
    if mode != "vector" and request.lang.split("-")[0].lower() not in ("en", "eng", "english"):
        warnings.append(f"text search reads words as English: lang {request.lang!r} is not used")
    query = SearchQuery(
        text=request.text if mode != "vector" else None,
        vector=vector if mode != "text" else None,
        limit=request.limit,
        metadata_filter=json_fields(request.metadata_filter or {}),
        confidence=request.confidence,
        alpha=request.alpha,
        fusion=request.fusion,
        mmr_strength=request.mmr_strength,
        k_multiplier=request.k_multiplier,
        include_embeddings=request.include_embeddings,
    )
    hits = await clients.docs.search(developer, [owner_id], query)
    return Found(hits, time.perf_counter() - started, warnings)


async def _query_vector(
    clients: Clients, developer: str, request: DocSearch, mode: str, warnings: list[str]
) -> list[float]:
    """The vector a vector or hybrid search looks for: the request's, checked, or its text embedded."""
    embedder = await clients.embedders.of(developer)
    vector = request.vector
    if vector is None:
        if not request.text:
            raise Invalid(f"a {mode} search needs `vector` or `text` to embed")
        (vector,) = await embedder.embed([request.text])
    elif len(vector) not in SUPPORTED_DIMENSIONS:
        *most, last = SUPPORTED_DIMENSIONS
        message = f"must have {', '.join(map(str, most))} or {last} numbers, not {len(vector)}"
        raise Invalid(f"vector {message}", problems=[Problem("body.vector", message)])
    elif len(vector) != embedder.dimensions:
        warnings.append(
            f"this vector has {len(vector)} numbers and your docs are embedded by {embedder.model} in "
            f"{embedder.dimensions}: it finds only docs embedded in {len(vector)} (see PUT /developer/settings)"
        )
    return vector
