"""Files: Julep v1's /files (services/files.py). Every answer carries a file's bytes base64 encoded, as
Julep's File does, and a list is written one file at a time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from api import schemas
from api.deps import ClientsDep, Developer, PageDep
from api.errors import ERROR_RESPONSES
from contracts.records.files import File
from services import files as service
from services.files import NewFile

router = APIRouter(tags=["files"], responses=ERROR_RESPONSES)


@router.post("/files", status_code=201, response_model=schemas.File)
async def create_file(
    body: schemas.FileCreate, request: Request, developer: Developer, clients: ClientsDep
) -> File:
    new = NewFile(body.name, body.description, body.mime_type, body.content, body.project)
    return await service.create_file(clients, developer, new, request.app.state.settings.max_file_bytes)


@router.get("/files", response_model=list[schemas.File])
async def list_files(developer: Developer, clients: ClientsDep, page: PageDep) -> StreamingResponse:
    """A plain JSON array, as Julep's router answers (and the SDK's `files.list` reads), newest first unless
    `direction`/`sort_by` say otherwise, each file with its content: read and written one file at a time, so
    that a page of large files never sits in memory whole."""
    files = await service.list_files(clients, developer, page)
    return StreamingResponse(_listed(files), media_type="application/json")


@router.get("/files/{file_id}", response_model=schemas.File)
async def get_file(file_id: str, developer: Developer, clients: ClientsDep) -> File:
    return await service.get_file(clients, developer, file_id)


@router.delete("/files/{file_id}", status_code=202, response_model=schemas.ResourceDeleted)
async def delete_file(file_id: str, developer: Developer, clients: ClientsDep) -> schemas.ResourceDeleted:
    await service.delete_file(clients, developer, file_id)
    return schemas.ResourceDeleted(id=file_id, deleted_at=datetime.now(UTC))


async def _listed(files: AsyncIterator[File]) -> AsyncIterator[bytes]:
    yield b"["
    written = 0
    async for file in files:
        item = schemas.File.model_validate(file, from_attributes=True).model_dump_json().encode()
        yield (b"," if written else b"") + item
        written += 1
    yield b"]"
