"""Users."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, field_validator

from api.schemas.common import Metadata, RequestBody, ToolMetadata


class UserCreate(RequestBody):
    name: str | None = None
    about: str | None = None
    project: str | None = None
    metadata: ToolMetadata | None = None


class User(BaseModel):
    id: str
    name: str | None = None
    about: str = ""  # as Julep answers a user created without one
    project: str | None = None
    metadata: Metadata = {}
    created_at: datetime
    updated_at: datetime

    @field_validator("about", mode="before")
    @classmethod
    def _julep_default(cls, value: Any) -> Any:
        return "" if value is None else value
