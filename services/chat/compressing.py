"""Adaptive context's chat side: starting a session's compression (CompressSessionWorkflow, one per session at
a time: its workflow id is the session's) in the background once the context passes the threshold, and, when
a context is over its budget, compressing before the model call, joining a compression already running."""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

from contracts.background import Compressed, SessionRef
from contracts.liveness import WORKFLOW_TASK_TIMEOUT
from contracts.temporal import COMPRESS_SESSION_WORKFLOW, tenant_priority
from services.chat.context import Context, NeedsCompression
from services.chat.session import ChatSession
from services.errors import ModelFailed, TooLarge

# A chat whose context is over budget waits this long for its session's history to be compressed.
COMPRESS_WAIT_SECONDS = 60.0


class Compressor:
    """Starts and joins sessions' compressions; `start` is the share of the budget past which they begin
    (MINT_ADAPTIVE_CONTEXT_START)."""

    def __init__(self, temporal: Client, task_queue: str, start: float):
        self.temporal = temporal
        self.task_queue = task_queue
        self.start = start

    async def maybe_start(self, developer: str, session: ChatSession, context: Context) -> None:
        """`adaptive`: past `start` of the budget, compress in the background until the system message and the
        history are under it again; the chat goes on meanwhile."""
        budget = context.budget
        if session.context_overflow != "adaptive" or not budget or context.wanted < self.start * budget:
            return
        target = max(0, int(self.start * budget) - context.system_tokens)
        await self._start(developer, session.id, target)

    async def now(self, developer: str, session_id: str, over: NeedsCompression) -> None:
        """Compress until the history fits beside the system message and the new messages, waiting at most
        COMPRESS_WAIT_SECONDS; a compression already running is joined (and, if it was aiming higher, one
        more is started after it)."""
        target = over.budget - over.fixed
        loop = asyncio.get_running_loop()
        deadline = loop.time() + COMPRESS_WAIT_SECONDS
        for _ in range(2):
            handle, ours = await self._start(developer, session_id, target)
            try:
                await asyncio.wait_for(handle.result(), max(0.1, deadline - loop.time()))
            except TimeoutError:
                raise TooLarge(
                    f"the context is {over.tokens} tokens, over its budget of {over.budget}, and compressing "
                    f"the session's history took longer than {COMPRESS_WAIT_SECONDS:.0f} s; try again"
                ) from None
            except WorkflowFailureError as exc:
                raise ModelFailed(f"compressing the session's history failed: {exc.cause or exc}") from None
            if ours:
                return

    async def _start(
        self, developer: str, session_id: str, target: int
    ) -> tuple[WorkflowHandle[Any, Compressed], bool]:
        """The session's compression: started now (True), or the one already running (False)."""
        workflow_id = f"compress-session-{developer}-{session_id}"
        try:
            handle: WorkflowHandle[Any, Compressed] = await self.temporal.start_workflow(
                COMPRESS_SESSION_WORKFLOW,
                SessionRef(developer_id=developer, session_id=session_id, target_tokens=target),
                id=workflow_id,
                task_queue=self.task_queue,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
                task_timeout=WORKFLOW_TASK_TIMEOUT,  # a lost worker costs seconds (contracts/liveness.py)
                priority=tenant_priority(developer),
                result_type=Compressed,
            )
            return handle, True
        except WorkflowAlreadyStartedError:
            return self.temporal.get_workflow_handle(workflow_id, result_type=Compressed), False
