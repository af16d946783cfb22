"""Users."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

from api.schemas.common import Metadata, RequestBody


class UserCreate(RequestBody):
    name: str | None = None
    about: str | None = None
    project: str | None = None
    metadata: Metadata | None = None


class User(BaseModel):
    id: str
    name: str | None = None
    about: str | None = None
    project: str | None = None
    metadata: Metadata = {}
    created_at: datetime
    updated_at: datetime
