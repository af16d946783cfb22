"""Docs of agents and users as the store answers them, and the hits of a search over them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from contracts.json import JsonObject, JsonValue


@dataclass(frozen=True)
class Doc:
    id: str
    title: str
    content: str | list[str]
    metadata: JsonObject
    status: str  # pending, indexed or failed
    created_at: datetime
    updated_at: datetime
    embed_instruction: str | None = None
    embedding_model: str | None = None
    embedding_dimensions: int | None = None
    embeddings: list[list[float]] | None = None  # each chunk's, when a list asked for them
    error: str | None = None


@dataclass(frozen=True)
class Snippet:
    """The best chunk of a doc a search found: its place among the doc's chunks, its text, its embedding."""

    index: int
    content: str
    embedding: list[float] | None = None


@dataclass(frozen=True)
class SearchHit:
    """One doc a search found, by its best chunk. `distance` is the cosine distance of a vector hit, else
    1 - score."""

    id: str
    title: str
    owner_id: str
    owner_type: str  # agent or user
    snippet: Snippet
    distance: float
    score: float
    metadata: JsonObject

    def json(self, with_embedding: bool) -> JsonObject:
        """The hit as a search answers it (Julep's DocReference), the snippet's embedding in it (null for a
        hit found by text alone) when the search asked for embeddings."""
        snippet: JsonObject = {"index": self.snippet.index, "content": self.snippet.content}
        if with_embedding:
            embedding: JsonValue = None if self.snippet.embedding is None else list(self.snippet.embedding)
            snippet["embedding"] = embedding
        return {
            "id": self.id,
            "title": self.title,
            "owner": {"id": self.owner_id, "role": self.owner_type},
            "snippet": snippet,
            "distance": self.distance,
            "score": self.score,
            "metadata": self.metadata,
        }
