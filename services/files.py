"""Files: Julep v1's /files. The bytes are kept in Postgres (infra/store/files.py) and travel base64 encoded, as
Julep's File carries them; a list reads one file's bytes at a time, so a page of large files never sits in
memory whole."""

from __future__ import annotations

import base64
import binascii
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from contracts.records.files import File, FileFields, StoredFile
from contracts.records.pages import Page
from infra.store.files import FileStore
from infra.store.projects import DEFAULT
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


def _file(stored: StoredFile, content: bytes) -> File:
    """The file as Julep answers it, its bytes base64 encoded."""
    return File(
        id=stored.id,
        name=stored.name,
        description=stored.description,
        mime_type=stored.mime_type,
        project=stored.project,
        size=stored.size,
        hash=stored.hash,
        content=base64.b64encode(content).decode("ascii"),
        created_at=stored.created_at,
    )


def _files(clients: Clients) -> FileStore:
    return FileStore(clients.store.pool)


async def create_file(clients: Clients, developer: str, new: NewFile, max_bytes: int) -> File:
    """Store the file's bytes (at most `max_bytes`) in its project."""
    content = _decoded(new.content, max_bytes)
    project = await project_named(clients, developer, new.project or DEFAULT)
    fields = FileFields(new.name, new.description, new.mime_type, project)
    return _file(await _files(clients).create(developer, fields, content), content)


async def list_files(clients: Clients, developer: str, page: Page) -> AsyncIterator[File]:
    """A page of the developer's files (read now), each read with its bytes only when its turn comes."""
    files = _files(clients)
    return _with_content(files, developer, await files.find(developer, page))


async def _with_content(
    files: FileStore, developer: str, stored: Sequence[StoredFile]
) -> AsyncIterator[File]:
    for each in stored:
        content = await files.content(developer, each.id)
        if content is not None:  # else deleted since the page was read
            yield _file(each, content)


async def get_file(clients: Clients, developer: str, file_id: str) -> File:
    found = await _files(clients).get(developer, checked_id(file_id, "file"))
    if found is None:
        raise NotFound("file", file_id)
    return _file(*found)


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
