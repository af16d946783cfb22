"""Docs work that belongs on the worker: embedding a new doc's chunks, and the task language's search step."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from temporalio import activity

from activities.heartbeat import heartbeating
from mint.models.embeddings import Embedder
from mint.store.docs import DocStore, SearchQuery
from mint.temporal import errors
from workflows.call_steps import SEARCH_DOCS
from workflows.docs import INDEX_DOC, MARK_DOC_FAILED


class DocActivities:
    def __init__(self, docs: DocStore, embedder: Embedder):
        self.docs = docs
        self.embedder = embedder

    @activity.defn(name=INDEX_DOC)
    async def index_doc(self, request: dict[str, Any]) -> dict[str, Any]:
        """Embed the doc's chunks that have no embedding yet (so a retry redoes only what is missing)."""
        async with heartbeating():
            developer_id, doc_id = request["developer_id"], request["doc_id"]
            instruction, chunks = await self.docs.unembedded(developer_id, doc_id)
            if chunks:
                vectors = await self.embedder.embed([text for _, text in chunks], instruction)
                await self.docs.save_embeddings(
                    developer_id,
                    doc_id,
                    self.embedder.model,
                    list(zip([i for i, _ in chunks], vectors, strict=True)),
                )
            return {"chunks": len(chunks), "model": self.embedder.model}

    @activity.defn(name=MARK_DOC_FAILED)
    async def mark_doc_failed(self, request: dict[str, Any]) -> None:
        await self.docs.mark_failed(request["developer_id"], request["doc_id"], request["error"])

    @activity.defn(name=SEARCH_DOCS)
    async def search_docs(self, request: dict[str, Any]) -> dict[str, Any]:
        """{developer_id, owner_ids, mode, text, ...SearchQuery fields} -> {response: {docs}, attempt}."""
        async with heartbeating():
            known = {f.name for f in fields(SearchQuery)}
            query = SearchQuery(**{k: v for k, v in request.items() if k in known})
            if request.get("mode", "hybrid") != "text":
                if not query.text:
                    raise errors.permanent("a vector or hybrid search needs a text query", "BadSearch")
                (query.vector,) = await self.embedder.embed([query.text])
                if request.get("mode") == "vector":
                    query.text = None
            docs = await self.docs.search(request["developer_id"], request["owner_ids"], query)
            return {"response": {"docs": docs}, "attempt": activity.info().attempt}
