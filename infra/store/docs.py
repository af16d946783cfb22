"""Docs: stored as chunks with a full-text index and embeddings (384 numbers by default; any size of
SUPPORTED_DIMENSIONS, each chunk's size beside it), searched in Postgres.

Search modes: `text` (full-text rank over any of the query's words), `vector` (cosine distance over the HNSW
index of the query vector's size, with a confidence cutoff) and `hybrid` (both, fused by reciprocal rank or by distribution-based score
fusion, weighted by `alpha`). MMR re-ranking (`mmr_strength`) trades relevance for variety. Every query is
filtered by developer and owner in SQL, so one tenant's docs never reach another's search.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import asyncpg

from contracts.records.docs import Doc, SearchHit
from contracts.records.pages import Page
from infra.store.chunking import chunk
from infra.store.db import HNSW_EF_SEARCH
from infra.store.doc_rows import doc_of, hit_of
from infra.store.ranking import DocFields, Hit, best_per_doc, fuse, mmr
from infra.store.rows import new_id

DEFAULT_DIMENSIONS = 384  # the offline all-MiniLM-L6-v2's
# The embedding sizes a chunk may have: each has its partial HNSW index (migration 0022). 1024 is Julep's.
SUPPORTED_DIMENSIONS = (384, 768, 1024, 1536)


def vector_literal(vector: list[float]) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def parse_vector(text: str) -> list[float]:
    return [float(x) for x in text.strip("[]").split(",")] if text and text != "[]" else []


@dataclass
class SearchQuery:
    text: str | None = None
    vector: list[float] | None = None
    limit: int = 10
    metadata_filter: Mapping[str, object] = field(default_factory=dict)
    confidence: float = 0.0  # vector hits need cosine similarity >= confidence
    alpha: float = 0.5  # hybrid: weight of the vector ranking (1 - alpha goes to text)
    fusion: str = "rrf"  # or "dbsf" (distribution-based score fusion)
    mmr_strength: float = 0.0  # 0: by relevance only; towards 1: more variety
    k_multiplier: int = 4  # candidates fetched per mode: limit * k_multiplier
    include_embeddings: bool = False


# A developer's ($1) docs not embedded by model $2 in $3 numbers.
STALE = "developer_id = $1 AND (embedding_model, embedding_dimensions) IS DISTINCT FROM ($2, $3)"

# The doc fields a search result carries, read in the same query as its chunk.
DOC_FIELDS = "d.title, d.owner_type, d.owner_id, d.metadata"


def _doc_fields(row: asyncpg.Record) -> DocFields:
    return DocFields(row["title"], row["owner_type"], str(row["owner_id"]), row["metadata"])


class DocStore:
    def __init__(self, pool: asyncpg.Pool):
        self.pool = pool

    async def create(
        self,
        developer_id: str,
        owner_type: str,
        owner_id: str,
        title: str,
        content: str | list[str],
        metadata: Mapping[str, object],
        embed_instruction: str | None,
    ) -> Doc:
        """The doc and its chunks (not yet embedded: status `pending`), in one transaction."""
        doc_id = new_id()
        pieces = chunk(content)
        async with self.pool.acquire() as conn, conn.transaction():
            row = await conn.fetchrow(
                "INSERT INTO docs (id, developer_id, owner_type, owner_id, title, content, metadata, "
                "embed_instruction) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *",
                doc_id,
                developer_id,
                owner_type,
                owner_id,
                title,
                content,
                metadata,
                embed_instruction,
            )
            await conn.executemany(
                "INSERT INTO doc_chunks (doc_id, idx, developer_id, owner_type, owner_id, content) "
                "VALUES ($1, $2, $3, $4, $5, $6)",
                [(doc_id, i, developer_id, owner_type, owner_id, text) for i, text in enumerate(pieces)],
            )
        return doc_of(row)

    async def get(self, developer_id: str, doc_id: str) -> Doc | None:
        row = await self.pool.fetchrow(
            "SELECT * FROM docs WHERE developer_id = $1 AND id = $2", developer_id, doc_id
        )
        return None if row is None else doc_of(row)

    async def find(
        self, developer_id: str, owner_type: str, owner_id: str, page: Page, include_embeddings: bool = False
    ) -> list[Doc]:
        args: list[object] = [developer_id, owner_type, owner_id]
        where = "developer_id = $1 AND owner_type = $2 AND owner_id = $3"
        if page.metadata_filter:
            args.append(page.metadata_filter)
            where += f" AND metadata @> ${len(args)}::jsonb"
        args += [page.limit, page.offset]
        rows = await self.pool.fetch(
            f"SELECT * FROM docs WHERE {where} ORDER BY {page.order()} LIMIT ${len(args) - 1} OFFSET ${len(args)}",
            *args,
        )
        docs = [doc_of(r) for r in rows]
        if not include_embeddings:
            return docs
        return [replace(doc, embeddings=await self.embeddings(developer_id, doc.id)) for doc in docs]

    async def embeddings(self, developer_id: str, doc_id: str) -> list[list[float]]:
        rows = await self.pool.fetch(
            "SELECT embedding::text AS e FROM doc_chunks WHERE developer_id = $1 AND doc_id = $2 ORDER BY idx",
            developer_id,
            doc_id,
        )
        return [parse_vector(r["e"]) for r in rows if r["e"]]

    async def delete(self, developer_id: str, owner_type: str, owner_id: str, doc_id: str) -> bool:
        result: str = await self.pool.execute(
            "DELETE FROM docs WHERE developer_id = $1 AND owner_type = $2 AND owner_id = $3 AND id = $4",
            developer_id,
            owner_type,
            owner_id,
            doc_id,
        )
        return result != "DELETE 0"

    async def delete_matching(
        self, developer_id: str, owner_type: str, owner_id: str, metadata_filter: Mapping[str, object] | None
    ) -> list[str]:
        """Delete the owner's docs whose metadata contains `metadata_filter` (all of them for None)."""
        rows = await self.pool.fetch(
            "DELETE FROM docs WHERE developer_id = $1 AND owner_type = $2 AND owner_id = $3 "
            "AND ($4::jsonb IS NULL OR metadata @> $4::jsonb) RETURNING id",
            developer_id,
            owner_type,
            owner_id,
            metadata_filter,
        )
        return [str(r["id"]) for r in rows]

    # Embedding -------------------------------------------------------------------------------------------

    async def unembedded(self, developer_id: str, doc_id: str) -> tuple[str | None, list[tuple[int, str]]]:
        """The doc's embed instruction and the chunks that still need an embedding."""
        doc = await self.get(developer_id, doc_id)
        if doc is None:
            return None, []
        rows = await self.pool.fetch(
            "SELECT idx, content FROM doc_chunks WHERE developer_id = $1 AND doc_id = $2 AND embedding IS NULL "
            "ORDER BY idx",
            developer_id,
            doc_id,
        )
        return doc.embed_instruction, [(r["idx"], r["content"]) for r in rows]

    async def save_embeddings(
        self, developer_id: str, doc_id: str, model: str, vectors: list[tuple[int, list[float]]]
    ) -> None:
        sizes = {len(v) for _, v in vectors}
        if len(sizes) != 1 or not sizes <= set(SUPPORTED_DIMENSIONS):
            raise ValueError(
                f"embeddings of {sorted(sizes)} numbers: each must have one of {SUPPORTED_DIMENSIONS}"
            )
        (size,) = sizes
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.executemany(
                "UPDATE doc_chunks SET embedding = $4::vector, dimensions = $5 "
                "WHERE developer_id = $1 AND doc_id = $2 AND idx = $3",
                [(developer_id, doc_id, idx, vector_literal(v), size) for idx, v in vectors],
            )
            await conn.execute(
                "UPDATE docs SET status = 'indexed', error = NULL, embedding_model = $3, embedding_dimensions = $4, "
                "updated_at = now() WHERE developer_id = $1 AND id = $2",
                developer_id,
                doc_id,
                model,
                size,
            )

    async def mark_failed(self, developer_id: str, doc_id: str, error: str) -> None:
        await self.pool.execute(
            "UPDATE docs SET status = 'failed', error = $3, updated_at = now() WHERE developer_id = $1 AND id = $2",
            developer_id,
            doc_id,
            error,
        )

    async def developers_with_docs(self) -> list[str]:
        return [
            str(r["developer_id"]) for r in await self.pool.fetch("SELECT DISTINCT developer_id FROM docs")
        ]

    async def stale(self, developer_id: str, model: str, dimensions: int, limit: int) -> list[str]:
        """The developer's docs embedded by another model or size (or never): what a re-embed must redo."""
        rows = await self.pool.fetch(
            f"SELECT id FROM docs WHERE {STALE} ORDER BY created_at LIMIT $4",
            developer_id,
            model,
            dimensions,
            limit,
        )
        return [str(r["id"]) for r in rows]

    async def count_stale(self, developer_id: str, model: str, dimensions: int) -> int:
        found: int = await self.pool.fetchval(
            f"SELECT count(*) FROM docs WHERE {STALE}", developer_id, model, dimensions
        )
        return found

    async def all_chunks(self, developer_id: str, doc_id: str) -> tuple[str | None, list[tuple[int, str]]]:
        """The doc's embed instruction and every chunk (a re-embed overwrites them in place)."""
        doc = await self.get(developer_id, doc_id)
        rows = await self.pool.fetch(
            "SELECT idx, content FROM doc_chunks WHERE developer_id = $1 AND doc_id = $2 ORDER BY idx",
            developer_id,
            doc_id,
        )
        return (None if doc is None else doc.embed_instruction), [(r["idx"], r["content"]) for r in rows]

    # Search ----------------------------------------------------------------------------------------------

    async def any_owned_by(self, developer_id: str, owner_ids: list[str]) -> bool:
        """Whether any of these owners has a doc (chat skips recall, and its embedding, when none has)."""
        found: bool = await self.pool.fetchval(
            "SELECT EXISTS (SELECT 1 FROM docs WHERE developer_id = $1 AND owner_id = ANY($2::uuid[]))",
            developer_id,
            owner_ids,
        )
        return found

    async def search(self, developer_id: str, owner_ids: list[str], query: SearchQuery) -> list[SearchHit]:
        """One result per doc (its best chunk), best first, at most `query.limit`."""
        want = query.limit * max(1, query.k_multiplier)
        searches = []
        if query.vector is not None:
            searches.append(self._vector(developer_id, owner_ids, query, want))
        if query.text:
            searches.append(self._text(developer_id, owner_ids, query, want))
        # A hybrid search runs both queries at once, on two connections.
        found = await asyncio.gather(*searches)
        vector_hits = found[0] if query.vector is not None else []
        text_hits = found[-1] if query.text else []
        if query.vector is not None and query.text:
            hits = fuse(vector_hits, text_hits, query.alpha, query.fusion)
        else:
            hits = vector_hits or text_hits
        hits = best_per_doc(hits)
        if query.mmr_strength > 0 and query.vector is not None:
            hits = mmr(hits, query.vector, query.mmr_strength, query.limit)
        return [hit_of(h, query.include_embeddings) for h in hits[: query.limit]]

    async def _vector(
        self, developer_id: str, owner_ids: list[str], query: SearchQuery, want: int
    ) -> list[Hit]:
        async with self.pool.acquire() as conn:
            if want <= HNSW_EF_SEARCH:  # the connection's ef_search (db.py) covers it: one round trip
                return await self._vector_query(conn, developer_id, owner_ids, query, want)
            async with conn.transaction():
                await conn.execute(f"SET LOCAL hnsw.ef_search = {want}")
                return await self._vector_query(conn, developer_id, owner_ids, query, want)

    async def _vector_query(
        self, conn: asyncpg.Connection, developer_id: str, owner_ids: list[str], query: SearchQuery, want: int
    ) -> list[Hit]:
        # Embeddings come back only when needed (MMR, or asked for): parsing 384 numbers per row is not free.
        embedding = "c.embedding::text" if query.mmr_strength > 0 or query.include_embeddings else "NULL"
        rows = await conn.fetch(
            vector_search_sql(embedding, bool(query.metadata_filter), len(query.vector or [])),
            query.vector or [],
            *_scope(developer_id, owner_ids, want, query.metadata_filter),
        )
        hits = [
            Hit(
                str(r["doc_id"]),
                r["idx"],
                r["content"],
                1 - r["distance"],
                _doc_fields(r),
                r["distance"],
                parse_vector(r["embedding"]) if r["embedding"] else None,
            )
            for r in rows
            if 1 - r["distance"] >= query.confidence
        ]
        return sorted(hits, key=lambda h: -h.score)  # relaxed_order may return near-ties out of order

    async def _text(
        self, developer_id: str, owner_ids: list[str], query: SearchQuery, want: int
    ) -> list[Hit]:
        # Any of the query's words may match (an AND of every word finds nothing for most questions);
        # ts_rank_cd ranks chunks matching more of them, closer together, higher.
        words = " | ".join(re.findall(r"\w+", query.text or "")[:64])
        if not words:
            return []
        rows = await self.pool.fetch(
            text_search_sql(bool(query.metadata_filter)),
            words,
            *_scope(developer_id, owner_ids, want, query.metadata_filter),
        )
        return [
            Hit(str(r["doc_id"]), r["idx"], r["content"], float(r["rank"]), doc=_doc_fields(r)) for r in rows
        ]


def vector_search_sql(embedding: str, filtered: bool, dimensions: int) -> str:
    """Vector search among the chunks of `dimensions` numbers: $1 the query vector, then _scope's arguments.
    `embedding` is the column's SQL or NULL."""
    if dimensions not in SUPPORTED_DIMENSIONS:  # (it is written into the SQL: only these numbers may be)
        raise ValueError(f"a query vector has one of {SUPPORTED_DIMENSIONS} numbers, not {dimensions}")
    # The query vector travels as a float4[] (asyncpg's binary encoding: ~10 us) cast to vector in SQL; as a
    # text literal it took ~0.35 ms to format here, and more for Postgres to parse. The cast to vector(n) and
    # the filter on `dimensions` are exactly the partial index's expression and predicate, so it is used.
    distance = f"c.embedding::vector({dimensions}) <=> $1::real[]::vector({dimensions})"
    return _ranked_sql(
        f"c.doc_id, c.idx, c.content, {embedding} AS embedding, {distance} AS distance",
        "doc_chunks c",
        f"c.dimensions = {dimensions}",
        distance,
        "distance",
        filtered,
    )


def text_search_sql(filtered: bool) -> str:
    """Full-text search: $1 the tsquery's words, then _scope's arguments."""
    return _ranked_sql(
        "c.doc_id, c.idx, c.content, ts_rank_cd(c.search_text, q, 32) AS rank",
        "doc_chunks c CROSS JOIN to_tsquery('english', $1) q",
        "c.search_text @@ q",
        "rank DESC",
        "rank DESC",
        filtered,
    )


def _scope(
    developer_id: str, owner_ids: list[str], want: int, metadata_filter: Mapping[str, object]
) -> list[object]:
    """The arguments $2.. of _ranked_sql: developer, owners, how many, and the metadata filter if any."""
    return [developer_id, owner_ids, want, *([metadata_filter] if metadata_filter else [])]


def _ranked_sql(columns: str, source: str, match: str, order: str, outer_order: str, filtered: bool) -> str:
    """The `$4` best chunks of developer `$2` and owners `$3` by `order`, best first, with their docs' fields.

    With a metadata filter (`$5`) every candidate chunk is joined to its doc before the ranking, since the
    filter is on the doc. Without one the ranking reads chunks alone and only its best are joined: a tenant
    with a few thousand chunks among many is searched exactly (the planner takes its rows through the owner
    index and sorts them), and joining each of those rows to docs cost more than the ranking itself.
    `outer_order` orders by `columns`' names.
    """
    where = f"c.developer_id = $2 AND c.owner_id = ANY($3::uuid[]) AND {match}"
    if filtered:
        return (
            f"SELECT {columns}, {DOC_FIELDS} FROM {source} JOIN docs d ON d.id = c.doc_id "
            f"WHERE {where} AND d.metadata @> $5::jsonb ORDER BY {order} LIMIT $4"
        )
    return (
        f"SELECT c.*, {DOC_FIELDS} FROM (SELECT {columns} FROM {source} WHERE {where} ORDER BY {order} LIMIT $4) c "
        f"JOIN docs d ON d.id = c.doc_id ORDER BY c.{outer_order}"
    )
