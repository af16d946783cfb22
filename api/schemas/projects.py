"""Projects."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, Field

from api.schemas.common import Name, RequestBody

# Julep's canonical names: machine-friendly identifiers.
CanonicalName = Annotated[str, Field(min_length=1, max_length=255, pattern=r"^[a-zA-Z][a-zA-Z0-9_]*$")]
# The project a resource names: looked up (in any case), so any text is a name to look for.
ProjectName = Annotated[str, Field(min_length=1, max_length=255)]


class ProjectCreate(RequestBody):
    name: Name
    canonical_name: CanonicalName | None = None  # made from the name when none is given
    metadata: dict[str, object] | None = None


class Project(BaseModel):
    id: str
    name: str
    canonical_name: str
    metadata: dict[str, object] = {}
    created_at: datetime
    updated_at: datetime
