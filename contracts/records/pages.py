"""A page of a list: how many, from where, in which order, and the metadata its items must contain."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Page:
    limit: int = 100
    offset: int = 0
    sort_by: str = "created_at"
    direction: str = "desc"
    metadata_filter: Mapping[str, object] | None = None  # a JSON object the rows' metadata must contain

    def order(self, alias: str = "") -> str:
        """The ORDER BY terms; `alias` qualifies the columns in a join (`e` for `e.created_at`)."""
        at = f"{alias}." if alias else ""
        column = "updated_at" if self.sort_by == "updated_at" else "created_at"
        direction = "ASC" if self.direction == "asc" else "DESC"
        return f"{at}{column} {direction}, {at}id {direction}"
