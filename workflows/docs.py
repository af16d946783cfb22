"""IndexDocWorkflow: embeds one doc in the background (started by the API when the doc is created)."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

from contracts.background import DocFailure, DocRef, IndexedDoc
from contracts.liveness import HEARTBEAT_TIMEOUT, WRITE_TIMEOUT
from contracts.temporal import INDEX_DOC, INDEX_DOC_WORKFLOW, MARK_DOC_FAILED


@workflow.defn(name=INDEX_DOC_WORKFLOW)
class IndexDocWorkflow:
    """A crash mid-embedding retries the activity; when retries run out the doc says `failed` and why."""

    @workflow.run
    async def run(self, request: DocRef) -> IndexedDoc:
        try:
            indexed: IndexedDoc = await workflow.execute_activity(
                INDEX_DOC,
                request,
                result_type=IndexedDoc,
                start_to_close_timeout=timedelta(minutes=10),
                heartbeat_timeout=HEARTBEAT_TIMEOUT,
                retry_policy=RetryPolicy(maximum_attempts=5, maximum_interval=timedelta(seconds=30)),
            )
        except ActivityError as exc:
            cause = exc.cause
            error = cause.message if isinstance(cause, ApplicationError) else str(cause or exc)
            await workflow.execute_activity(
                MARK_DOC_FAILED,
                DocFailure(request.developer_id, request.doc_id, f"embedding failed: {error}"),
                start_to_close_timeout=WRITE_TIMEOUT,
            )
            raise
        return indexed
