"""Completion webhooks: an execution with a callback_url reports each of its reportable statuses
(contracts/webhooks.py REPORTED_STATUSES) by starting a WebhookDelivery child workflow that outlives it
(ParentClosePolicy.ABANDON). The child runs one deliver_webhook activity, retried with backoff for up to a day
until the receiver answers 2xx, so a delivery survives a worker or API crash and shows on the Temporal UI."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

from contracts.executions import ExecutionParams
from contracts.json import JsonObject, JsonValue
from contracts.webhooks import (
    DELIVER_WEBHOOK,
    WEBHOOK_DELIVERY_WORKFLOW,
    WebhookDelivery,
    delivery_summary,
    report_delivery,
)

DELIVERY_DEADLINE = timedelta(hours=24)
# A little more than one attempt's HTTP exchange (activities/webhooks.py ATTEMPT_SECONDS): a worker lost
# mid-attempt is noticed this soon, and the attempt sent again by another (or the restarted) worker.
ATTEMPT_TIMEOUT = timedelta(seconds=15)
DELIVERY_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(hours=1),
    # A refused address or a malformed URL cannot succeed later: the delivery fails at once, and says why.
    non_retryable_error_types=["EgressRefused", "BadCallbackUrl"],
)


@workflow.defn(name=WEBHOOK_DELIVERY_WORKFLOW)
class WebhookDeliveryWorkflow:
    @workflow.run
    async def run(self, delivery: WebhookDelivery) -> None:
        await workflow.execute_activity(
            DELIVER_WEBHOOK,
            delivery,
            schedule_to_close_timeout=DELIVERY_DEADLINE,
            start_to_close_timeout=ATTEMPT_TIMEOUT,
            retry_policy=DELIVERY_RETRY,
            summary=delivery_summary(delivery),
        )


class Webhooks:
    """The send points of one execution's webhooks; every method is a no-op without a callback_url, so an
    execution without one (every recorded history) schedules no command for them."""

    def __init__(self, params: ExecutionParams):
        self.url = params.callback_url
        self.execution_id = params.execution_id
        self.developer_id = params.developer_id
        task_id = params.task_info.get("id")
        self.task_id = task_id if isinstance(task_id, str) else None
        self.open_waits: dict[int, JsonObject] = {}  # by the seq of their `wait` transition

    async def ended(self, seq: int, status: str, outcome: JsonObject) -> None:
        """The execution ended with `status` at transition `seq`; `outcome` is `{"output"}` or `{"error"}`."""
        await self._send(seq, {"status": status, **outcome})

    async def waiting(self, seq: int, wait: JsonObject) -> None:
        """A wait opened at transition `seq`: report every open wait."""
        if self.url is None:
            return
        self.open_waits[seq] = wait
        waits: list[JsonValue] = list(self.open_waits.values())
        await self._send(seq, {"status": "awaiting_input", "waits": waits})

    def answered(self, seq: int) -> None:
        self.open_waits.pop(seq, None)

    async def _send(self, seq: int, report: JsonObject) -> None:
        if self.url is None:
            return
        first_run = workflow.info().first_execution_run_id
        delivery = report_delivery(
            self.execution_id, self.task_id, self.developer_id, self.url, seq, first_run, report
        )
        try:
            await workflow.start_child_workflow(
                WEBHOOK_DELIVERY_WORKFLOW,
                delivery,
                id=delivery.delivery_id,
                parent_close_policy=workflow.ParentClosePolicy.ABANDON,
                static_summary=delivery_summary(delivery),
            )
        except WorkflowAlreadyStartedError:
            pass  # the same delivery, started by an earlier run of this execution (a restart)
