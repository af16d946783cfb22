"""Jobs."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel


class JobStatus(BaseModel):
    """What a job's state is: an execution's workflow (the job's id is the execution's) or a doc's indexing
    (the doc's id). Mint, as Julep, counts no progress within a job: `has_progress` is false, `progress` 0."""

    id: str
    name: str
    reason: str = ""
    has_progress: bool = False
    progress: float = 0
    state: Literal["pending", "in_progress", "retrying", "succeeded", "aborted", "failed", "unknown"]
    created_at: datetime
    updated_at: datetime
