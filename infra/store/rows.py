"""What every store module shares: the connection pool they read through, the
conflict a write may meet, a row as a plain dict, and the readers of its columns (each column narrowed to the
type a record holds; a row that does not fit is a bug in the store, said as a TypeError naming the column)."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from datetime import datetime

import asyncpg

from contracts.json import JsonObject, JsonValue

Row = Mapping[str, object]


class Conflict(Exception):
    """A write collided with an existing row: a taken id, or a name that must be unique."""


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


def text(row: Row, key: str) -> str:
    value = row[key]
    if not isinstance(value, str):
        raise _wrong(key, "text", value)
    return value


def optional_text(row: Row, key: str) -> str | None:
    value = row.get(key)
    return None if value is None else text(row, key)


def integer(row: Row, key: str, default: int | None = None) -> int:
    value = row.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise _wrong(key, "an integer", value)
    return value


def number(row: Row, key: str, default: float | None = None) -> float:
    value = row.get(key, default)
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise _wrong(key, "a number", value)
    return float(value)


def moment(row: Row, key: str) -> datetime:
    value = row[key]
    if not isinstance(value, datetime):
        raise _wrong(key, "a time", value)
    return value


def json_value(row: Row, key: str) -> JsonValue:
    """A JSON value (absent: null): checked at its top level, as JSON parsed or stored is JSON throughout."""
    value = row.get(key)
    if value is None or isinstance(value, bool | int | float | str | list | dict):
        return value
    raise _wrong(key, "JSON", value)


def json_object(row: Row, key: str) -> JsonObject:
    """A JSON object column; absent or null is the empty object."""
    value = row.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _wrong(key, "a JSON object", value)
    return value


def optional_object(row: Row, key: str) -> JsonObject | None:
    return None if row.get(key) is None else json_object(row, key)


def _wrong(key: str, expected: str, value: object) -> TypeError:
    return TypeError(f"stored {key} is {type(value).__name__}, not {expected}")
