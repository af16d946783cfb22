"""Secrets: the value goes in, and only a mask comes out."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, Field

from api.schemas.common import RequestBody
from contracts.json import JsonObject

SecretName = Annotated[
    str,
    Field(
        pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$",
        description="an identifier, so that tool specs can say `secrets.NAME`",
    ),
]


class SecretCreate(RequestBody):
    name: SecretName
    value: Annotated[str, Field(min_length=1, max_length=64 * 1024)]
    description: str | None = None
    metadata: JsonObject | None = None


class Secret(BaseModel):
    """A secret as the API shows it: `value` is always a mask; the value itself is never returned."""

    id: str
    name: str
    value: str
    description: str | None = None
    metadata: JsonObject = {}
    created_at: datetime
    updated_at: datetime
