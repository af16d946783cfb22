"""Ranking search hits: one per doc, two rankings fused into one (reciprocal rank or distribution-based
score fusion), and maximal marginal relevance for variety. Pure: infra/store/docs.py gives it the hits."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from contracts.json import JsonObject

RRF_K = 60


@dataclass(frozen=True)
class DocFields:
    """What a hit carries of its doc."""

    title: str
    owner_type: str
    owner_id: str
    metadata: JsonObject


@dataclass
class Hit:
    doc_id: str
    index: int
    content: str
    score: float
    doc: DocFields
    distance: float | None = None
    embedding: list[float] | None = None


def best_per_doc(hits: list[Hit]) -> list[Hit]:
    seen: dict[str, Hit] = {}
    for hit in hits:  # hits arrive best first
        seen.setdefault(hit.doc_id, hit)
    return list(seen.values())


def fuse(vector_hits: list[Hit], text_hits: list[Hit], alpha: float, method: str) -> list[Hit]:
    """One ranking from two: reciprocal-rank fusion, or distribution-based score fusion (each list's scores
    scaled by its mean +- 3 standard deviations), `alpha` weighting the vector side."""
    merged: dict[tuple[str, int], Hit] = {}
    scores: dict[tuple[str, int], float] = {}
    for weight, hits in ((alpha, vector_hits), (1 - alpha, text_hits)):
        if method == "dbsf":
            values = [h.score for h in hits]
            mean = sum(values) / len(values) if values else 0.0
            spread = 3 * math.sqrt(sum((v - mean) ** 2 for v in values) / len(values)) if values else 0.0
            low, high = mean - spread, mean + spread
            contribution = [((h.score - low) / (high - low)) if high > low else 1.0 for h in hits]
        else:
            contribution = [1 / (RRF_K + rank + 1) for rank in range(len(hits))]
        for hit, value in zip(hits, contribution, strict=True):
            merged.setdefault(_key(hit), hit)
            if hit.distance is not None:
                merged[_key(hit)] = hit  # keep the vector hit: it knows its distance and embedding
            scores[_key(hit)] = scores.get(_key(hit), 0.0) + weight * value
    ranked = sorted(merged, key=lambda k: -scores[k])
    return [replace(merged[k], score=scores[k]) for k in ranked]


def mmr(hits: list[Hit], query: list[float], strength: float, limit: int) -> list[Hit]:
    """Maximal marginal relevance: each pick balances similarity to the query against similarity to what
    was already picked (`strength` 0 keeps the ranking, towards 1 favours variety)."""
    pool = [h for h in hits if h.embedding]
    chosen: list[Hit] = []
    while pool and len(chosen) < limit:
        best = max(
            pool,
            key=lambda h: (
                (1 - strength) * _cosine(query, h.embedding or [])
                - strength * max((_cosine(h.embedding or [], c.embedding or []) for c in chosen), default=0.0)
            ),
        )
        chosen.append(best)
        pool.remove(best)
    return chosen + [h for h in hits if not h.embedding]


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def _key(hit: Hit) -> tuple[str, int]:
    return hit.doc_id, hit.index
