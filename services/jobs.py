"""Jobs (Julep v1's GET /jobs/{id}): what a job id names in Mint, and its state in Julep's JobStatus.

Julep's job ids were Temporal workflow ids (an execution's answer named its workflow's in `metadata.jobs`),
described by Temporal for any caller holding one. Mint's work of that kind is an execution's workflow, whose
id is the execution's, and a doc's indexing (its embeddings, computed in the background), named by the doc's
id. A job id is looked up among the caller's executions, then the caller's docs: a job is its developer's
alone, and an id that is neither is not a job.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from contracts.records.docs import Doc
from contracts.records.executions import Execution
from contracts.temporal import INDEX_DOC_WORKFLOW, TASK_EXECUTION_WORKFLOW
from services.clients import Clients
from services.docs import index_workflow_id
from services.errors import NotFound, Unavailable

# An execution's status as a job's state: `queued` is not started yet; from `starting` its workflow runs.
EXECUTION_STATES = {
    "queued": "pending",
    "starting": "in_progress",
    "running": "in_progress",
    "awaiting_input": "in_progress",
    "succeeded": "succeeded",
    "failed": "failed",
    "cancelled": "aborted",
}
# A workflow's status as a job's state, as Julep's jobs router maps it.
WORKFLOW_STATES = {
    WorkflowExecutionStatus.RUNNING: "in_progress",
    WorkflowExecutionStatus.CONTINUED_AS_NEW: "in_progress",
    WorkflowExecutionStatus.COMPLETED: "succeeded",
    WorkflowExecutionStatus.FAILED: "failed",
    WorkflowExecutionStatus.TIMED_OUT: "failed",
    WorkflowExecutionStatus.CANCELED: "aborted",
    WorkflowExecutionStatus.TERMINATED: "aborted",
}


@dataclass(frozen=True)
class JobStatus:
    id: str
    name: str
    state: str
    reason: str
    created_at: datetime
    updated_at: datetime


async def job_status(clients: Clients, developer: str, job_id: str) -> JobStatus:
    """The JobStatus of the developer's execution or doc `job_id`; NotFound if the developer has neither."""
    try:
        id_ = str(uuid.UUID(job_id))
    except ValueError:
        id_ = None  # no execution's or doc's id
    if id_ is not None:
        execution = await clients.store.get_execution(developer, id_)
        if execution is not None:
            return _execution_job(execution)
        doc = await clients.docs.get(developer, id_)
        if doc is not None:
            return await _indexing_job(clients.temporal, doc)
    hint = "a job's id is that of one of your executions (its workflow) or of one of your docs (its indexing)"
    raise NotFound("job", job_id, hint)


def _execution_job(execution: Execution) -> JobStatus:
    status = execution.status
    reason = f"Execution status: {status}" + (f": {execution.error}" if execution.error else "")
    return _job(execution, TASK_EXECUTION_WORKFLOW, EXECUTION_STATES.get(status, "unknown"), reason)


async def _indexing_job(temporal: Client, doc: Doc) -> JobStatus:
    """An indexed or failed doc says so itself; a pending one's indexing may not have started yet (an import
    starts them a few at a time), so its workflow is asked."""
    if doc.status == "indexed":
        return _job(doc, INDEX_DOC_WORKFLOW, "succeeded", "Doc status: indexed")
    if doc.status == "failed":
        return _job(doc, INDEX_DOC_WORKFLOW, "failed", f"Doc status: failed: {doc.error or ''}")
    try:
        described = await temporal.get_workflow_handle(index_workflow_id(doc.id)).describe()
    except RPCError as exc:
        if exc.status != RPCStatusCode.NOT_FOUND:
            raise Unavailable(f"could not read the indexing of doc {doc.id}: {exc.message}") from None
        return _job(doc, INDEX_DOC_WORKFLOW, "pending", "Doc status: pending: its indexing has not started")
    state = WORKFLOW_STATES.get(described.status, "unknown") if described.status else "unknown"
    return _job(doc, INDEX_DOC_WORKFLOW, state, f"Doc status: pending: its indexing workflow is {state}")


def _job(of: Execution | Doc, name: str, state: str, reason: str) -> JobStatus:
    return JobStatus(of.id, name, state, reason, of.created_at, of.updated_at)
