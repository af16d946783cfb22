"""Files: Julep v1's /files. The bytes are kept in Postgres (infra/store/files.py) and travel base64 encoded, as
Julep's File carries them; a list reads one file's bytes at a time, so a page of large files never sits in
memory whole."""

from __future__ import annotations

import base64
import binascii
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import datetime

from infra.store.files import FileStore
from infra.store.projects import DEFAULT
from infra.store.rows import Row, integer, moment, optional_text, text
from infra.store.tables import Page
from services.clients import Clients
from services.errors import Invalid, NotFound, TooLarge
from services.ids import checked_id
from services.project_names import project_named
from workflows.problems import Problem


@dataclass(frozen=True)
class NewFile:
    name: str
    description: str
    mime_type: str | None
    content: str  # base64
    project: str | None  # the developer's `default` project when None


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

    @classmethod
    def of(cls, row: Row, content: bytes) -> File:
        return cls(
            id=text(row, "id"),
            name=text(row, "name"),
            description=optional_text(row, "description") or "",
            mime_type=optional_text(row, "mime_type"),
            project=optional_text(row, "project"),
            size=integer(row, "size"),
            hash=text(row, "hash"),
            content=base64.b64encode(content).decode("ascii"),
            created_at=moment(row, "created_at"),
        )


def _files(clients: Clients) -> FileStore:
    return FileStore(clients.store.pool)


async def create_file(clients: Clients, developer: str, new: NewFile, max_bytes: int) -> File:
    """Store the file's bytes (at most `max_bytes`) in its project."""
    content = _decoded(new.content, max_bytes)
    project = await project_named(clients, developer, new.project or DEFAULT)
    fields = {
        "name": new.name,
        "description": new.description,
        "mime_type": new.mime_type,
        "project": project,
    }
    return File.of(await _files(clients).create(developer, fields, content), content)


async def list_files(clients: Clients, developer: str, page: Page) -> AsyncIterator[File]:
    """A page of the developer's files (read now), each read with its bytes only when its turn comes."""
    files = _files(clients)
    return _with_content(files, developer, await files.find(developer, page))


async def _with_content(files: FileStore, developer: str, rows: Sequence[Row]) -> AsyncIterator[File]:
    for row in rows:
        content = await files.content(developer, text(row, "id"))
        if content is not None:  # else deleted since the page was read
            yield File.of(row, content)


async def get_file(clients: Clients, developer: str, file_id: str) -> File:
    found = await _files(clients).get(developer, checked_id(file_id, "file"), with_content=True)
    if found is None:
        raise NotFound("file", file_id)
    content = found.pop("content")
    if not isinstance(content, bytes):
        raise TypeError(f"stored content is {type(content).__name__}, not bytes")
    return File.of(found, content)


async def delete_file(clients: Clients, developer: str, file_id: str) -> None:
    if not await _files(clients).delete(developer, checked_id(file_id, "file")):
        raise NotFound("file", file_id)


def _decoded(content: str, limit: int) -> bytes:
    """The bytes `content` encodes (standard base64; line breaks and spaces are skipped), within `limit`."""
    try:
        data = binascii.a2b_base64("".join(content.split()), strict_mode=True)
    except (binascii.Error, ValueError) as exc:
        raise _bad_content(f"is not valid base64 ({exc})") from None
    if not data:
        raise _bad_content("is empty: a file holds at least one byte")
    if len(data) > limit:
        message = f"holds {len(data):,} bytes, more than the {limit:,} a file may hold (MINT_MAX_FILE_BYTES)"
        raise TooLarge(f"file too large: content {message}", problems=[Problem("body.content", message)])
    return data


def _bad_content(message: str) -> Invalid:
    return Invalid(f"invalid request: body.content: {message}", problems=[Problem("body.content", message)])
