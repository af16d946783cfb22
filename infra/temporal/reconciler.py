"""The reconciler: ends executions whose workflow can no longer end them itself.

Normally the workflow writes every transition, its last one included. But a workflow can close without
running Mint's code (terminated by an operator or by Temporal at a history limit, timed out), never start
(the start request was lost), or fail its workflow task forever (a bug in Mint). Every worker runs this loop:
it claims a few live executions that have been quiet for a while, asks Temporal about each, and writes the
final transition for the ones that cannot finish. A workflow that is still running and healthy is left alone.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from contracts.json import JsonObject
from contracts.records.executions import QuietExecution
from contracts.webhooks import WEBHOOK_DELIVERY_WORKFLOW, delivery_summary, report_delivery
from infra.store.tables import Store

log = logging.getLogger("mint.reconciler")

# A workflow task that has failed this many times in a row will not succeed by retrying.
STUCK_TASK_ATTEMPTS = 10


@dataclass(frozen=True)
class ReconcilerSettings:
    interval_seconds: float = 30.0
    quiet_seconds: float = 120.0  # only executions with no change for this long are looked at
    batch: int = 50
    # Where a WebhookDelivery runs: the worker's main queue (Settings.task_queue).
    task_queue: str = "mint-tasks"


class Reconciler:
    def __init__(self, store: Store, temporal: Client, settings: ReconcilerSettings = ReconcilerSettings()):
        self.store = store
        self.temporal = temporal
        self.settings = settings

    async def run_forever(self) -> None:
        while True:
            try:
                await self.reconcile_once()
            except Exception:  # keep the loop alive; the next round retries
                log.exception("reconciling executions failed")
            await asyncio.sleep(self.settings.interval_seconds)

    async def reconcile_once(self) -> int:
        """Check one batch of quiet live executions; return how many were ended."""
        claimed = await self.store.claim_quiet_executions(self.settings.quiet_seconds, self.settings.batch)
        ended = 0
        for execution in claimed:
            ended += await self._reconcile(execution)
        return ended

    async def _reconcile(self, execution: QuietExecution) -> int:
        handle = self.temporal.get_workflow_handle(execution.id)
        try:
            description = await handle.describe()
        except RPCError as exc:
            if exc.status != RPCStatusCode.NOT_FOUND:
                raise
            if execution.status in ("queued", "starting"):
                message = "ExecutionLost: the execution's workflow never started (its start request was lost)"
                return await self._end(execution, "error", "failed", message)
            return 0
        status = description.status
        first_run = description.raw_description.workflow_execution_info.first_run_id
        if status == WorkflowExecutionStatus.RUNNING:
            pending = description.raw_description.pending_workflow_task
            if pending.attempt < STUCK_TASK_ATTEMPTS:
                return 0
            message = (
                f"InternalError: the workflow failed {pending.attempt} times in a row in Mint's own code and was "
                "stopped"
            )
            await handle.terminate(reason=message)
            return await self._end(execution, "error", "failed", message, first_run)
        if status == WorkflowExecutionStatus.CANCELED:
            return await self._end(execution, "cancelled", "cancelled", None, first_run)
        name = status.name.lower() if status else "closed"
        message = f"ExecutionLost: the workflow ended outside Mint ({name})"
        return await self._end(execution, "error", "failed", message, first_run)

    async def _end(
        self,
        execution: QuietExecution,
        kind: str,
        status: str,
        message: str | None,
        first_run: str = "none",
    ) -> int:
        """Write the execution's end; report it to its callback_url, as its workflow would have. `first_run`:
        the first run of its workflow, which a delivery's id names (`none` when it never started)."""
        seq = await self.store.end_execution(execution.developer_id, execution.id, kind, status, message)
        if seq is None:
            return 0
        log.warning("ended execution %s as %s: %s", execution.id, status, message)
        if execution.callback_url:
            # The outcome as the workflow words it (workflows/interpreter.py): a cancel's error is `cancelled`.
            report: JsonObject = {"status": status, "error": message or "cancelled"}
            await self._report(execution, execution.callback_url, seq, first_run, report)
        return 1

    async def _report(
        self, execution: QuietExecution, url: str, seq: int, first_run: str, report: JsonObject
    ) -> None:
        """Start the WebhookDelivery the workflow would have started (workflows/webhooks.py), on the worker's
        queue. Its id is the delivery's, so a second reconciler's start is refused and ignored. A reconciler
        lost between the end's write and this start sends no webhook: the execution has ended, and no later
        round looks at it again."""
        delivery = report_delivery(
            execution.id, execution.task_id, execution.developer_id, url, seq, first_run, report
        )
        try:
            await self.temporal.start_workflow(
                WEBHOOK_DELIVERY_WORKFLOW,
                delivery,
                id=delivery.delivery_id,
                task_queue=self.settings.task_queue,
                static_summary=delivery_summary(delivery),
            )
        except WorkflowAlreadyStartedError:
            pass
