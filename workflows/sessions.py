"""CompressSessionWorkflow: folds a session's older messages into its summary (adaptive context overflow)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy

COMPRESS_SESSION = "compress_session"
COMPRESS_WORKFLOW = "CompressSessionWorkflow"


@workflow.defn(name=COMPRESS_WORKFLOW)
class CompressSessionWorkflow:
    """One at a time per session (its workflow id is the session's); chat goes on meanwhile."""

    @workflow.run
    async def run(self, request: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = await workflow.execute_activity(
            COMPRESS_SESSION,
            request,
            start_to_close_timeout=timedelta(minutes=5),
            heartbeat_timeout=timedelta(seconds=30),
            retry_policy=RetryPolicy(maximum_attempts=3),
        )
        return result
