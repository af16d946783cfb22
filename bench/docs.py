"""Doc search at scale: 100,000 chunks of 384 dimensions in pgvector, measured in one run.

Run: python -m bench.docs [N] [--explain]   (starts its own embedded Postgres; N defaults to 100,000)
     python -m bench.docs --embedder [--save FILE]   (the local embedder on real text, no Postgres)
Loads N synthetic chunks (unit vectors around 200 topics, and text drawn from each topic's words), builds the
HNSW index Mint uses (m 16, ef_construction 64), then runs 200 queries through Mint's own search code:
p50/p95 latency of vector and hybrid search, and recall@10 of vector search against exact search (the same
query with the index disabled). Targets: recall@10 >= 0.95 at p50 <= 5 ms; hybrid p50 within 2x of vector.

With --embedder it measures the local embedder (all-MiniLM-L6-v2) instead: the paragraphs of docs/*.md are
the chunks and each section's heading a query that its own paragraphs answer; it prints the time to load the
model, to embed one query and each batch of 32 chunks, and recall@10 (the share of headings with one of their
paragraphs among the 10 nearest chunks). --save FILE writes the texts and vectors as JSON, so that two
embedders' vectors can be compared text by text.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

from infra.models.embeddings import LOCAL_MODEL, EmbeddingChoice, embedder_for
from infra.store.db import connect_pool, migrate
from infra.store.docs import (
    DEFAULT_DIMENSIONS as DIMENSIONS,
)
from infra.store.docs import (
    DocStore,
    SearchQuery,
    text_search_sql,
    vector_literal,
    vector_search_sql,
)
from infra.store.tables import Store
from process import local_services

TOPICS, QUERIES, BATCH = 200, 200, 5_000
INDEX_SQL = (  # as migration 0022 has it
    f"CREATE INDEX doc_chunks_embedding_{DIMENSIONS} ON doc_chunks USING hnsw "
    f"((embedding::vector({DIMENSIONS})) vector_cosine_ops) WITH (m = 16, ef_construction = 64) "
    f"WHERE dimensions = {DIMENSIONS}"
)


def _unit(vector: list[float]) -> list[float]:
    norm = sum(x * x for x in vector) ** 0.5
    return [x / norm for x in vector]


def _near(center: list[float], rng: random.Random, spread: float = 0.6) -> list[float]:
    return _unit([c + rng.gauss(0, spread / DIMENSIONS**0.5) for c in center])


async def main(count: int) -> None:
    rng = random.Random(7)
    centers = [_unit([rng.gauss(0, 1) for _ in range(DIMENSIONS)]) for _ in range(TOPICS)]
    words = [[f"w{t}x{i}" for i in range(30)] for t in range(TOPICS)]
    # Its data is deleted at the end: 100k chunks take about 1 GB.
    server = local_services.start_postgres(
        Path(tempfile.mkdtemp(prefix="mint-bench-docs-")), cleanup_mode="delete"
    )
    pool = await connect_pool(local_services.postgres_url(server), max_size=4)
    try:
        await migrate(pool)
        developer, _ = await Store(pool).create_developer("bench")
        owner = str(uuid.uuid4())
        await pool.execute(f"DROP INDEX doc_chunks_embedding_{DIMENSIONS}")
        started = time.perf_counter()
        for first in range(0, count, BATCH):
            ids, texts, vectors = [], [], []
            for _ in range(min(BATCH, count - first)):
                topic = rng.randrange(TOPICS)
                ids.append(uuid.uuid4())
                texts.append(" ".join(rng.sample(words[topic], 8)))
                vectors.append(vector_literal(_near(centers[topic], rng)))
            await pool.execute(
                "INSERT INTO docs (id, developer_id, owner_type, owner_id, title, content, status) "
                "SELECT i, $2, 'agent', $3, 'bench', to_jsonb(t), 'indexed' FROM unnest($1::uuid[], $4::text[]) AS u(i, t)",
                ids,
                developer,
                owner,
                texts,
            )
            await pool.execute(
                "INSERT INTO doc_chunks (doc_id, idx, developer_id, owner_type, owner_id, content, embedding, "
                f"dimensions) SELECT i, 0, $2, 'agent', $3, t, e::vector, {DIMENSIONS} FROM unnest($1::uuid[], $4::text[], $5::text[]) AS u(i, t, e)",
                ids,
                developer,
                owner,
                texts,
                vectors,
            )
        loaded = time.perf_counter() - started
        # Built with the server's maintenance_work_mem (local_services.postgres_settings).
        started = time.perf_counter()
        await pool.execute(INDEX_SQL)
        built = time.perf_counter() - started
        # What autovacuum does in a running system: the full-text index's pending entries are merged.
        await pool.execute("VACUUM ANALYZE doc_chunks")
        await pool.execute("VACUUM ANALYZE docs")

        docs = DocStore(pool)
        queries = []
        for _ in range(QUERIES):
            topic = rng.randrange(TOPICS)
            queries.append((_near(centers[topic], rng), " ".join(rng.sample(words[topic], 3))))
        vector_ms, hybrid_ms, recalls = [], [], []
        for vector, text in queries:
            start = time.perf_counter()
            found = await docs.search(developer, [owner], SearchQuery(vector=vector, limit=10, confidence=-1))
            vector_ms.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            await docs.search(
                developer, [owner], SearchQuery(vector=vector, text=text, limit=10, confidence=-1)
            )
            hybrid_ms.append((time.perf_counter() - start) * 1000)
            async with pool.acquire() as conn, conn.transaction():
                await conn.execute("SET LOCAL enable_indexscan = off")
                exact = await conn.fetch(
                    "SELECT doc_id FROM doc_chunks WHERE developer_id = $1 ORDER BY embedding <=> $2::vector LIMIT 10",
                    developer,
                    vector_literal(vector),
                )
            truth = {str(r["doc_id"]) for r in exact}
            recalls.append(len(truth & {d.id for d in found}) / len(truth))
        if "--explain" in sys.argv:  # where a query's time goes, as Postgres sees it: Mint's own SQL
            vector, text = queries[0]
            async with pool.acquire() as conn:
                for sql, arg in (
                    (vector_search_sql("NULL", False, DIMENSIONS), vector),
                    (text_search_sql(filtered=False), " | ".join(text.split())),
                ):
                    plan = await conn.fetch("EXPLAIN (ANALYZE, BUFFERS) " + sql, arg, developer, [owner], 40)
                    print("\n".join(r[0] for r in plan if "Order By" not in r[0]))
    finally:
        await pool.close()
        server.cleanup()

    def pct(values: list[float], q: float) -> float:
        return sorted(values)[int(q * (len(values) - 1))]

    vp50, hp50 = statistics.median(vector_ms), statistics.median(hybrid_ms)
    print(
        f"{count:,} chunks of {DIMENSIONS} dimensions: loaded in {loaded:.1f} s, HNSW index built in {built:.1f} s"
    )
    print(f"  vector search   p50 {vp50:6.2f} ms   p95 {pct(vector_ms, 0.95):6.2f} ms   (target p50 <= 5 ms)")
    print(
        f"  hybrid search   p50 {hp50:6.2f} ms   p95 {pct(hybrid_ms, 0.95):6.2f} ms   ratio {hp50 / vp50:4.2f}x (target <= 2x)"
    )
    print(f"  recall@10 vs exact search: {statistics.mean(recalls):.3f} (target >= 0.95)")


def doc_sections(folder: Path) -> list[tuple[str, list[str]]]:
    """(heading, its paragraphs) for each section of the Markdown files in `folder` that has paragraphs."""
    sections: list[tuple[str, list[str]]] = []
    for path in sorted(folder.glob("*.md")):
        heading = ""
        paragraphs: list[str] = []
        for block in re.split(r"\n\s*\n", path.read_text()):
            block = block.strip()
            if block.startswith("#") and "\n" not in block:
                if heading and paragraphs:
                    sections.append((heading, paragraphs))
                heading, paragraphs = block.lstrip("#").strip(), []
            elif len(block) >= 40:
                paragraphs.append(block)
        if heading and paragraphs:
            sections.append((heading, paragraphs))
    return sections


async def embedder_main(save: Path | None) -> None:
    embedder = embedder_for(EmbeddingChoice(LOCAL_MODEL))
    sections = doc_sections(Path(__file__).resolve().parent.parent / "docs")
    chunks = [(i, p) for i, (_, paragraphs) in enumerate(sections) for p in paragraphs]
    started = time.perf_counter()
    await embedder.embed(["load the model"])
    loaded = time.perf_counter() - started
    query_ms = []
    for heading, _ in sections[:50]:
        started = time.perf_counter()
        await embedder.embed([heading])
        query_ms.append((time.perf_counter() - started) * 1000)
    vectors, batch_s = [], []
    for first in range(0, len(chunks), 32):
        started = time.perf_counter()
        vectors += await embedder.embed([text for _, text in chunks[first : first + 32]])
        batch_s.append(time.perf_counter() - started)
    queries = await embedder.embed([heading for heading, _ in sections])
    nearest = np.argsort(-(np.array(queries) @ np.array(vectors).T), axis=1)[:, :10]  # exact cosine
    hits = sum(any(chunks[c][0] == section for c in row) for section, row in enumerate(nearest))
    print(f"{len(chunks)} paragraphs under {len(sections)} headings of docs/*.md, {embedder.model}")
    print(f"  model loaded and first text embedded in {loaded:.2f} s")
    print(
        f"  one query p50 {statistics.median(query_ms):.1f} ms; a batch of 32 paragraphs p50 {statistics.median(batch_s):.2f} s"
    )
    print(f"  recall@10 (a heading finds one of its paragraphs): {hits / len(sections):.3f}")
    if save:
        texts = [h for h, _ in sections] + [t for _, t in chunks]
        save.write_text(json.dumps({"texts": texts, "vectors": queries + vectors}))


if __name__ == "__main__":
    if "--embedder" in sys.argv:
        saved = sys.argv[sys.argv.index("--save") + 1] if "--save" in sys.argv else None
        asyncio.run(embedder_main(Path(saved) if saved else None))
    else:
        numbers = [a for a in sys.argv[1:] if a.isdigit()]
        asyncio.run(main(int(numbers[0]) if numbers else 100_000))
