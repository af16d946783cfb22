"""Docs work that belongs on the worker: embedding a new doc's chunks, and the task language's search step."""

from __future__ import annotations

from temporalio import activity

from activities.heartbeat import heartbeating
from contracts.background import DocFailure, DocRef, IndexedDoc
from contracts.calls import CallAnswer, SearchRequest
from contracts.temporal import INDEX_DOC, MARK_DOC_FAILED, SEARCH_DOCS
from infra.models.embeddings import Embedders, WrongSize
from infra.store.docs import DocStore, SearchQuery
from infra.temporal import errors


class DocActivities:
    def __init__(self, docs: DocStore, embedders: Embedders):
        self.docs = docs
        self.embedders = embedders

    @activity.defn(name=INDEX_DOC)
    async def index_doc(self, request: DocRef) -> IndexedDoc:
        """Embed the doc's chunks that have no embedding yet (so a retry redoes only what is missing)."""
        async with heartbeating():
            developer_id, doc_id = request.developer_id, request.doc_id
            instruction, chunks = await self.docs.unembedded(developer_id, doc_id)
            embedder = await self.embedders.of(developer_id)
            if chunks:
                try:
                    vectors = await embedder.embed([text for _, text in chunks], instruction)
                except WrongSize as exc:
                    raise errors.permanent(str(exc), "EmbeddingFailed") from None
                await self.docs.save_embeddings(
                    developer_id,
                    doc_id,
                    embedder.model,
                    list(zip([i for i, _ in chunks], vectors, strict=True)),
                )
            return IndexedDoc(chunks=len(chunks), model=embedder.model)

    @activity.defn(name=MARK_DOC_FAILED)
    async def mark_doc_failed(self, request: DocFailure) -> None:
        await self.docs.mark_failed(request.developer_id, request.doc_id, request.error)

    @activity.defn(name=SEARCH_DOCS)
    async def search_docs(self, request: SearchRequest) -> CallAnswer:
        """The search step's query -> {docs}."""
        async with heartbeating():
            query = SearchQuery(
                text=request.text,
                limit=request.limit,
                metadata_filter=request.metadata_filter,
                confidence=request.confidence,
                alpha=request.alpha,
                mmr_strength=request.mmr_strength,
            )
            if request.mode != "text":
                if not query.text:
                    raise errors.permanent("a vector or hybrid search needs a text query", "BadSearch")
                (query.vector,) = await (await self.embedders.of(request.developer_id)).embed([query.text])
                if request.mode == "vector":
                    query.text = None
            hits = await self.docs.search(request.developer_id, request.owner_ids, query)
            docs = [hit.json(query.include_embeddings) for hit in hits]
            return CallAnswer(response={"docs": docs}, attempt=activity.info().attempt)
