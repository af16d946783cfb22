"""IndexDocWorkflow: embeds one doc in the background (started by the API when the doc is created)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

INDEX_DOC = "index_doc"
MARK_DOC_FAILED = "mark_doc_failed"
INDEX_WORKFLOW = "IndexDocWorkflow"


@workflow.defn(name=INDEX_WORKFLOW)
class IndexDocWorkflow:
    """A crash mid-embedding retries the activity; when retries run out the doc says `failed` and why."""

    @workflow.run
    async def run(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            result: dict[str, Any] = await workflow.execute_activity(
                INDEX_DOC,
                request,
                start_to_close_timeout=timedelta(minutes=10),
                heartbeat_timeout=timedelta(seconds=30),
                retry_policy=RetryPolicy(maximum_attempts=5, maximum_interval=timedelta(seconds=30)),
            )
            return result
        except ActivityError as exc:
            cause = exc.cause
            error = cause.message if isinstance(cause, ApplicationError) else str(cause or exc)
            await workflow.execute_activity(
                MARK_DOC_FAILED,
                {**request, "error": f"embedding failed: {error}"},
                start_to_close_timeout=timedelta(seconds=30),
            )
            raise
