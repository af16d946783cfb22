"""Files: Julep v1's /files. The bytes are kept in Postgres (infra/store/files.py); every answer carries them
base64 encoded, as Julep's File does, and a list is written one file at a time."""

from __future__ import annotations

import base64
import binascii
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse

from api import schemas
from api.deps import Developer, PageDep, StoreDep, checked_id
from api.errors import ERROR_RESPONSES, ApiError, not_found
from api.routes.projects import project_or_404
from infra.store.files import FileStore
from infra.store.projects import DEFAULT
from workflows.problems import Problem

router = APIRouter(tags=["files"], responses=ERROR_RESPONSES)


def get_files(store: StoreDep) -> FileStore:
    return FileStore(store.pool)


Files = Annotated[FileStore, Depends(get_files)]


@router.post("/files", status_code=201, response_model=schemas.File)
async def create_file(
    body: schemas.FileCreate, request: Request, developer: Developer, store: StoreDep, files: Files
) -> Any:
    content = _decoded(body.content, request.app.state.settings.max_file_bytes)
    project = await project_or_404(store, developer, body.project or DEFAULT)
    fields = {**body.model_dump(exclude={"content"}), "project": project}
    return _file_out(await files.create(developer, fields, content), content)


@router.get("/files", response_model=list[schemas.File])
async def list_files(developer: Developer, files: Files, page: PageDep) -> Any:
    """A plain JSON array, as Julep's router answers (and the SDK's `files.list` reads), newest first unless
    `direction`/`sort_by` say otherwise, each file with its content: read and written one file at a time, so
    that a page of large files never sits in memory whole."""
    return StreamingResponse(
        _listed(files, developer, await files.find(developer, page)), media_type="application/json"
    )


@router.get("/files/{file_id}", response_model=schemas.File)
async def get_file(file_id: str, developer: Developer, files: Files) -> Any:
    found = await files.get(developer, checked_id(file_id, "file"), with_content=True)
    if found is None:
        raise not_found("file", file_id)
    return _file_out(found, found.pop("content"))


@router.delete("/files/{file_id}", status_code=202, response_model=schemas.ResourceDeleted)
async def delete_file(file_id: str, developer: Developer, files: Files) -> Any:
    if not await files.delete(developer, checked_id(file_id, "file")):
        raise not_found("file", file_id)
    return {"id": file_id, "deleted_at": datetime.now(UTC)}


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
        raise ApiError(413, f"file too large: content {message}", [Problem("body.content", message)])
    return data


def _bad_content(message: str) -> ApiError:
    return ApiError(422, f"invalid request: body.content: {message}", [Problem("body.content", message)])


def _file_out(row: dict[str, Any], content: bytes) -> dict[str, Any]:
    return {**row, "content": base64.b64encode(content).decode("ascii")}


async def _listed(files: FileStore, developer: str, rows: list[dict[str, Any]]) -> AsyncIterator[bytes]:
    yield b"["
    written = 0
    for row in rows:
        content = await files.content(developer, row["id"])
        if content is None:
            continue  # deleted since the page was read
        item = schemas.File.model_validate(_file_out(row, content)).model_dump_json().encode()
        yield (b"," if written else b"") + item
        written += 1
    yield b"]"
