"""What crosses the Temporal boundary for completion webhooks: the workflow that delivers one, the activity
that sends it, and its payload. Kept apart from contracts/temporal.py's tables (as contracts/schedules.py is):
a delivery is not a step, and outlives the execution that asked for it. The worker registers these on its
main queue (process/worker.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import AfterValidator

from contracts.json import JsonObject

WEBHOOK_DELIVERY_WORKFLOW = "WebhookDelivery"
DELIVER_WEBHOOK = "deliver_webhook"

# The statuses an execution reports to its callback_url.
REPORTED_STATUSES = ("succeeded", "failed", "cancelled", "awaiting_input")
MAX_CALLBACK_URL = 2048


def delivery_id(execution_id: str, seq: int, first_run_id: str) -> str:
    """A delivery's id (its workflow's id and its Mint-Delivery-Id header): the execution, the seq of the
    transition that reached the status, and the start of the first run of the execution's workflow (a
    restart runs the execution anew, and numbers its transitions again from the point it restarts at), so a
    replay or a retry names the same delivery and no two deliveries share one."""
    return f"webhook-{execution_id}-{seq}-{first_run_id[:8]}"


@dataclass(frozen=True)
class WebhookDelivery:
    """One webhook to send: `body` is the JSON posted to `url`, signed with the developer's secret as it is
    when each attempt is sent."""

    delivery_id: str
    developer_id: str
    url: str
    body: JsonObject


def report_delivery(
    execution_id: str,
    task_id: str | None,
    developer_id: str,
    url: str,
    seq: int,
    first_run_id: str,
    report: JsonObject,
) -> WebhookDelivery:
    """The delivery that reports one status of an execution (`report`: its `status` and `output`, `error` or
    `waits`), reached at transition `seq`: the one body every webhook has, whoever sends it (the workflow,
    or the reconciler for an end it writes)."""
    return WebhookDelivery(
        delivery_id=delivery_id(execution_id, seq, first_run_id),
        developer_id=developer_id,
        url=url,
        body={"execution_id": execution_id, "task_id": task_id, **report},
    )


def delivery_summary(delivery: WebhookDelivery) -> str:
    """How a delivery's workflow is named on the Temporal UI: the status it reports and where to."""
    host = urlsplit(delivery.url).hostname or "?"
    return f"webhook {delivery.body.get('status')} → {host}"


# name -> (input type, result type).
WEBHOOK_ACTIVITIES: dict[str, tuple[Any, Any]] = {DELIVER_WEBHOOK: (WebhookDelivery, None)}
WEBHOOK_WORKFLOWS: dict[str, tuple[Any, Any]] = {WEBHOOK_DELIVERY_WORKFLOW: (WebhookDelivery, None)}


def callback_url_problem(url: str) -> str | None:
    """What is wrong with a callback_url as written (the egress rules judge its address when it is sent)."""
    if len(url) > MAX_CALLBACK_URL:
        return f"must be at most {MAX_CALLBACK_URL} characters"
    try:
        parts = urlsplit(url)
        host, _ = parts.hostname, parts.port
    except ValueError:
        return "is not a valid URL"
    if parts.scheme not in ("http", "https"):
        return "must be an http or https URL"
    if not host:
        return "must name a host"
    if any(c.isspace() or ord(c) < 32 for c in url):
        return "must not contain spaces or control characters"
    return None


def checked_callback_url(url: str) -> str:
    if (problem := callback_url_problem(url)) is not None:
        raise ValueError(problem)
    return url


# A callback_url in a request body or a task: refused with a 422 naming the field when malformed.
CallbackUrl = Annotated[str, AfterValidator(checked_callback_url)]
