"""Files (Julep v1's /files): what the store keeps of one, and a file as the API answers it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class FileFields:
    """What a new file is given besides its bytes: `project` is a project's canonical name."""

    name: str
    description: str
    mime_type: str | None
    project: str


@dataclass(frozen=True)
class StoredFile:
    """A file's description as the store keeps it: everything but its bytes. `hash` is their sha256, in hex."""

    id: str
    name: str
    description: str
    mime_type: str | None
    project: str | None
    size: int
    hash: str
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class File:
    """A file as Julep answers it: `content` is its bytes, base64 encoded; `hash` their sha256, in hex."""

    id: str
    name: str
    description: str
    mime_type: str | None
    project: str | None
    size: int
    hash: str
    content: str
    created_at: datetime
