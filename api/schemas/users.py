"""Users."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, TypeAdapter, field_validator

from api.schemas.common import RequestBody, ToolMetadata
from contracts.json import JsonObject
from services.users import UserChange


class UserCreate(RequestBody):
    name: str | None = None
    about: str | None = None
    project: str | None = None
    metadata: ToolMetadata | None = None

    def change(self, replace: bool = False) -> UserChange:
        """What the body changes: the keys it gives, or (`replace`) every key, unset ones at their defaults."""
        return _USER_CHANGE.validate_python(self.model_dump(exclude_unset=not replace))


_USER_CHANGE = TypeAdapter(UserChange)


class User(BaseModel):
    id: str
    name: str | None = None
    about: str = ""  # as Julep answers a user created without one
    project: str | None = None
    metadata: JsonObject = {}
    created_at: datetime
    updated_at: datetime

    @field_validator("about", mode="before")
    @classmethod
    def _julep_default(cls, value: object) -> object:
        return "" if value is None else value
