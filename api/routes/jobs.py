"""Jobs: Julep v1's GET /jobs/{id}, for an execution's workflow or a doc's indexing (services/jobs.py)."""

from __future__ import annotations

from fastapi import APIRouter

from api import schemas
from api.deps import ClientsDep, Developer
from api.errors import ERROR_RESPONSES
from services.jobs import JobStatus, job_status

router = APIRouter(tags=["jobs"], responses=ERROR_RESPONSES)


@router.get("/jobs/{job_id}", response_model=schemas.JobStatus)
async def get_job(job_id: str, developer: Developer, clients: ClientsDep) -> JobStatus:
    return await job_status(clients, developer, job_id)
