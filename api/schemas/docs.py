"""Docs, their search and embeddings."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from api.schemas.common import RequestBody

# A number of a query vector: finite and within float4 (pgvector's element), so Postgres never refuses it.
VectorNumber = Annotated[float, Field(allow_inf_nan=False, ge=-3.4e38, le=3.4e38)]


class DocCreate(RequestBody):  # Julep's SDK may send fields Mint has no use for: ignored, said
    title: Annotated[str, Field(min_length=1, max_length=800)]
    content: (
        Annotated[str, Field(max_length=1_000_000)]
        | Annotated[list[str], Field(min_length=1, max_length=10_000)]
    )
    metadata: dict[str, object] | None = None
    embed_instruction: str | None = None


class DocsImport(RequestBody):
    docs: Annotated[list[DocCreate], Field(min_length=1, max_length=1000)]


class Doc(BaseModel):
    id: str
    title: str
    content: str | list[str]
    metadata: dict[str, object] = {}
    embed_instruction: str | None = None
    embedding_model: str | None = None
    embedding_dimensions: int | None = None
    embeddings: list[list[float]] | None = None
    status: str
    error: str | None = None
    created_at: datetime
    updated_at: datetime


class DocsDelete(RequestBody):
    metadata_filter: dict[str, object] | None = None
    delete_all: bool = False


class DocSearch(RequestBody):
    """Julep's text, vector and hybrid search bodies in one, with Julep's defaults; `mode` lets Mint embed
    `text` itself. `lang` other than English is said in the Warning header (the text index is English);
    `trigram_similarity_threshold` is taken and not used, as on Julep unless its operator enabled trigrams."""

    text: Annotated[str, Field(max_length=10_000)] | None = None
    vector: Annotated[list[VectorNumber], Field(max_length=4096)] | None = None  # (sizes: services/docs.py)
    mode: Literal["text", "vector", "hybrid"] | None = None
    limit: Annotated[int, Field(ge=1, le=100)] = 10
    metadata_filter: dict[str, object] | None = None
    confidence: Annotated[float, Field(ge=-1, le=1)] = 0.5  # vector hits need this cosine similarity
    alpha: Annotated[float, Field(ge=0, le=1)] = 0.5
    fusion: Literal["rrf", "dbsf"] = "rrf"
    mmr_strength: Annotated[float, Field(ge=0, lt=1)] = 0.5  # as on Julep (vector and hybrid)
    k_multiplier: Annotated[int, Field(ge=1, le=10)] = 5
    include_embeddings: bool = True
    lang: Annotated[str, Field(max_length=35)] = "en-US"
    trigram_similarity_threshold: Annotated[float, Field(ge=0, le=1)] | None = None


class Embed(RequestBody):
    text: (
        Annotated[str, Field(max_length=100_000)] | Annotated[list[str], Field(min_length=1, max_length=256)]
    )
    embed_instruction: str | None = None
