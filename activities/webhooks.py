"""deliver_webhook: one attempt at POSTing a completion webhook, signed with the developer's current secret,
to the address the egress check approved (the same rules as api_call's, activities/egress.py)."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time

import httpx
from temporalio import activity

from activities.egress import EgressPolicy, EgressRefused
from activities.http import pinned_url
from contracts.webhooks import DELIVER_WEBHOOK, WebhookDelivery
from infra.store.webhook_secrets import WebhookSecrets
from infra.temporal import errors

log = logging.getLogger(__name__)

# One attempt's whole HTTP exchange; the delivery's workflow gives an attempt a little more than this
# (workflows/webhooks.py), so a worker lost mid-attempt is noticed soon and the attempt is sent again.
ATTEMPT_SECONDS = 10.0


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The Mint-Signature header: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


class WebhookActivities:
    def __init__(self, http: httpx.AsyncClient, egress: EgressPolicy, secrets: WebhookSecrets):
        self.http = http
        self.egress = egress
        self.secrets = secrets

    @activity.defn(name=DELIVER_WEBHOOK)
    async def deliver_webhook(self, delivery: WebhookDelivery) -> None:
        """POST the delivery's body; any answer but a 2xx fails the attempt (Temporal retries it), a URL the
        egress rules refuse fails the delivery for good."""
        where = f"webhook {delivery.delivery_id}"
        try:
            destination = await self.egress.resolve(delivery.url)
        except EgressRefused as exc:
            log.warning("%s is not sent: the egress rules refuse its callback_url: %s", where, exc)
            raise errors.permanent(f"callback_url refused: {exc}", "EgressRefused") from None
        body = json.dumps(delivery.body, separators=(",", ":"), ensure_ascii=False).encode()
        secret = await self.secrets.get(delivery.developer_id)
        headers = {
            "Content-Type": "application/json",
            "Mint-Signature": signature(secret, int(time.time()), body),
            "Mint-Delivery-Id": delivery.delivery_id,
        }
        url, headers, extensions = pinned_url(delivery.url, destination, headers)
        try:
            response = await self.http.post(
                url,
                content=body,
                headers=headers,
                timeout=ATTEMPT_SECONDS,
                follow_redirects=False,
                extensions=extensions,
            )
        except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
            raise errors.permanent(f"callback_url is not valid: {exc}", "BadCallbackUrl") from None
        except httpx.HTTPError as exc:
            raise errors.transient(f"{where}: {type(exc).__name__}: {exc}", "WebhookUnreachable") from None
        if not 200 <= response.status_code < 300:
            raise errors.transient(f"{where}: the receiver answered {response.status_code}", "WebhookRefused")
