"""Ids are UUIDs: anything else names nothing the caller has."""

from __future__ import annotations

import uuid

from services.errors import NotFound


def checked_id(value: str, kind: str) -> str:
    """The id as stored (a UUID's canonical text); NotFound, naming `value` as given, for one that is no UUID."""
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise NotFound(kind, value) from None
