"""Creating and searching docs: what the docs routes call."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from temporalio.client import Client
from temporalio.common import WorkflowIDReusePolicy

from api import schemas
from api.errors import ApiError
from api.warning_header import note
from contracts.background import DocRef, IndexedDoc
from contracts.liveness import WORKFLOW_TASK_TIMEOUT
from contracts.temporal import INDEX_DOC_WORKFLOW, tenant_priority
from infra.models.embeddings import Embedders
from infra.store.docs import SUPPORTED_DIMENSIONS, DocStore, SearchQuery
from workflows.problems import Problem

# A create waits this long for its embeddings, so a doc is usually searchable by meaning as soon as the
# create returns; a slower one answers `pending` and finishes in the background.
INDEX_WAIT_SECONDS = 20.0
IMPORT_CONCURRENCY = 8  # workflow starts in flight at once for an import (each holds a pool connection after)


async def create_doc(
    docs: DocStore,
    temporal: Client,
    task_queue: str,
    developer: str,
    owner: tuple[str, str],
    body: schemas.DocCreate,
    wait: float = INDEX_WAIT_SECONDS,
) -> dict[str, Any]:
    """Store the doc and its chunks (searchable by text at once), then embed them in a workflow."""
    doc = await _store(docs, developer, owner, body)
    await index(docs, temporal, task_queue, developer, doc["id"], wait)
    return await docs.get(developer, doc["id"]) or doc


async def import_docs(
    docs: DocStore,
    temporal: Client,
    task_queue: str,
    developer: str,
    owner: tuple[str, str],
    bodies: list[schemas.DocCreate],
) -> list[dict[str, Any]]:
    """Many docs: stored in order (a bad one stops the import there), then their indexing started a few at a
    time, not waited for. (Started one by one, the workflow starts of a 1,000-doc import took over a minute.)"""
    limit = asyncio.Semaphore(IMPORT_CONCURRENCY)

    async def start_indexing(doc: dict[str, Any]) -> dict[str, Any]:
        async with limit:
            await index(docs, temporal, task_queue, developer, doc["id"], wait=0)
            return await docs.get(developer, doc["id"]) or doc

    created: list[dict[str, Any]] = []
    try:
        for body in bodies:
            created.append(await _store(docs, developer, owner, body))
    finally:  # the docs stored before a bad one are kept, so they get indexed too
        indexed = await asyncio.gather(*map(start_indexing, created))
    return list(indexed)


async def _store(
    docs: DocStore, developer: str, owner: tuple[str, str], body: schemas.DocCreate
) -> dict[str, Any]:
    return await docs.create(
        developer, owner[0], owner[1], body.title, body.content, body.metadata or {}, body.embed_instruction
    )


def index_workflow_id(doc_id: str) -> str:
    """The id of the workflow that embeds a doc's chunks (started again, under the same id, to redo it)."""
    return f"index-doc-{doc_id}"


async def index(
    docs: DocStore, temporal: Client, task_queue: str, developer: str, doc_id: str, wait: float
) -> None:
    try:
        handle = await temporal.start_workflow(
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
        await docs.mark_failed(developer, doc_id, f"could not start indexing: {exc}")
        return
    if wait > 0:
        try:
            await asyncio.wait_for(handle.result(), wait)
        except Exception:
            pass  # still running (or failed, which the doc now says): the doc's status tells the caller


async def search(
    docs: DocStore, embedders: Embedders, developer: str, owner_ids: list[str], body: schemas.DocSearch
) -> dict[str, Any]:
    """Julep's three request shapes: `text` alone is a text search, `vector` alone a vector search, both a
    hybrid one; `mode` asks Mint to embed `text` itself for a vector or hybrid search. A vector finds the
    chunks embedded in as many numbers as it has."""
    started = time.perf_counter()
    mode = body.mode or ("hybrid" if body.text and body.vector else "vector" if body.vector else "text")
    vector = body.vector
    if mode in ("vector", "hybrid"):
        embedder = await embedders.of(developer)
        if vector is None:
            if not body.text:
                raise ApiError(422, f"a {mode} search needs `vector` or `text` to embed")
            (vector,) = await embedder.embed([body.text])
        elif len(vector) not in SUPPORTED_DIMENSIONS:
            *most, last = SUPPORTED_DIMENSIONS
            message = f"must have {', '.join(map(str, most))} or {last} numbers, not {len(vector)}"
            raise ApiError(422, f"vector {message}", [Problem("body.vector", message)])
        elif len(vector) != embedder.dimensions:
            note(
                f"this vector has {len(vector)} numbers and your docs are embedded by {embedder.model} in "
                f"{embedder.dimensions}: it finds only docs embedded in {len(vector)} (see PUT /developer/settings)"
            )
    if mode in ("text", "hybrid") and not body.text:
        raise ApiError(422, f"a {mode} search needs `text`")
    if mode != "vector" and body.lang.split("-")[0].lower() not in ("en", "eng", "english"):
        note(f"text search reads words as English: lang {body.lang!r} is not used")
    query = SearchQuery(
        text=body.text if mode != "vector" else None,
        vector=vector if mode != "text" else None,
        limit=body.limit,
        metadata_filter=body.metadata_filter or {},
        confidence=body.confidence,
        alpha=body.alpha,
        fusion=body.fusion,
        mmr_strength=body.mmr_strength,
        k_multiplier=body.k_multiplier,
        include_embeddings=body.include_embeddings,
    )
    found = await docs.search(developer, owner_ids, query)
    return {"docs": found, "time": time.perf_counter() - started}
