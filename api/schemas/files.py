"""Files."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, Field

from api.schemas.common import Name, RequestBody
from api.schemas.projects import ProjectName


class FileCreate(RequestBody):
    name: Name
    description: Annotated[str, Field(max_length=1000)] = ""
    mime_type: Annotated[str, Field(max_length=127)] | None = None
    content: str = Field(description="The file's bytes, base64 encoded")
    project: ProjectName | None = None  # the developer's `default` project when none is given


class File(BaseModel):
    """A file as Julep answers it: `content` is its bytes, base64 encoded; `hash` their sha256, in hex."""

    id: str
    name: str
    description: str = ""
    mime_type: str | None = None
    project: str | None = None
    size: int
    hash: str
    content: str
    created_at: datetime
