"""A docs row read into its record (contracts/records/docs.py), and a ranked hit (infra/store/ranking.py) into
the search hit the store answers."""

from __future__ import annotations

import asyncpg

from contracts.records.docs import Doc, SearchHit, Snippet
from infra.store import rows
from infra.store.ranking import Hit


def doc_of(row: asyncpg.Record) -> Doc:
    fields = rows.record(row)
    dimensions = fields.get("embedding_dimensions")
    return Doc(
        id=rows.text(fields, "id"),
        title=rows.text(fields, "title"),
        content=_content(fields["content"]),
        metadata=rows.json_object(fields, "metadata"),
        status=rows.text(fields, "status"),
        created_at=rows.moment(fields, "created_at"),
        updated_at=rows.moment(fields, "updated_at"),
        embed_instruction=rows.optional_text(fields, "embed_instruction"),
        embedding_model=rows.optional_text(fields, "embedding_model"),
        embedding_dimensions=None if dimensions is None else rows.integer(fields, "embedding_dimensions"),
        error=rows.optional_text(fields, "error"),
    )


def hit_of(hit: Hit, with_embedding: bool) -> SearchHit:
    """The hit as the store answers it: its embedding only if the search asked for it (MMR reads it too)."""
    return SearchHit(
        id=hit.doc_id,
        title=hit.doc.title,
        owner_id=hit.doc.owner_id,
        owner_type=hit.doc.owner_type,
        snippet=Snippet(hit.index, hit.content, hit.embedding if with_embedding else None),
        distance=hit.distance if hit.distance is not None else round(1 - hit.score, 6),
        score=hit.score,
        metadata=hit.doc.metadata,
    )


def _content(value: object) -> str | list[str]:
    """A doc's content: one text, or its passages."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(piece, str) for piece in value):
        return value
    raise TypeError(f"stored content is {type(value).__name__}, not text or a list of texts")
