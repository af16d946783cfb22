"""What every store module shares: the connection pool they read through, the paging of a list, the
conflict a write may meet, and a row as a plain dict."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

import asyncpg


class Conflict(Exception):
    """A write collided with an existing row: a taken id, or a name that must be unique."""


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


def record(row: asyncpg.Record) -> dict[str, object]:
    """A row as a plain dict with string ids."""
    return {k: str(v) if isinstance(v, uuid.UUID) else v for k, v in row.items()}


def record_or_none(row: asyncpg.Record | None) -> dict[str, object] | None:
    """A row that may be missing (fetchrow's answer) as record() gives it."""
    return None if row is None else record(row)


def new_id() -> str:
    return str(uuid.uuid4())


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class PoolUser:
    """A part of the Store (infra/store/tables.py): its methods read and write through `pool`."""

    def __init__(self, pool: asyncpg.Pool):
        self.pool = pool
