"""CompressSessionWorkflow: compresses a session's history into summarizer entries (adaptive context overflow,
activities/sessions.py)."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

from contracts.background import Compressed, SessionRef
from contracts.liveness import HEARTBEAT_TIMEOUT
from contracts.temporal import COMPRESS_SESSION, COMPRESS_SESSION_WORKFLOW


@workflow.defn(name=COMPRESS_SESSION_WORKFLOW)
class CompressSessionWorkflow:
    """One at a time per session (its workflow id is the session's); chat goes on meanwhile."""

    @workflow.run
    async def run(self, request: SessionRef) -> Compressed:
        compressed: Compressed = await workflow.execute_activity(
            COMPRESS_SESSION,
            request,
            result_type=Compressed,
            start_to_close_timeout=timedelta(minutes=5),
            heartbeat_timeout=HEARTBEAT_TIMEOUT,
            retry_policy=RetryPolicy(maximum_attempts=3),
        )
        return compressed
