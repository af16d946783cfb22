"""Jobs: Julep v1's GET /jobs/{id}, for an execution's workflow or a doc's indexing (api/jobs.py)."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter, Request

from api import schemas
from api.deps import Developer, StoreDep
from api.errors import ERROR_RESPONSES, ApiError
from api.jobs import job_status

router = APIRouter(tags=["jobs"], responses=ERROR_RESPONSES)


@router.get("/jobs/{job_id}", response_model=schemas.JobStatus)
async def get_job(job_id: str, request: Request, developer: Developer, store: StoreDep) -> Any:
    found = None
    if _is_uuid(job_id):  # else no execution's or doc's id
        found = await job_status(store, request.app.state.temporal, developer, str(uuid.UUID(job_id)))
    if found is None:
        raise ApiError(
            404,
            f"job {job_id} not found: a job's id is that of one of your executions (its workflow) "
            "or of one of your docs (its indexing)",
        )
    return found


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True
