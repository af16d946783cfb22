"""Completion webhooks: a receiver that checks each webhook's Mint-Signature, and a task that asks for
approval, so it reports `awaiting_input` (with its open wait) and then `succeeded` (with its output).

Run against a running Mint (`mint up`), from the repository. The receiver listens on 127.0.0.1, which the
egress rules refuse unless allowed, so start Mint with `MINT_EGRESS_ALLOW=127.0.0.1`; then:
    MINT_API_URL=http://127.0.0.1:8080 MINT_API_KEY=... python examples/webhook.py
It prints each webhook the receiver got: its Mint-Delivery-Id, its status and whether its signature verified.
The deliveries show on the Temporal UI as WebhookDelivery workflows, each running `deliver_webhook`.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

TASK = {
    "name": "expense approval",
    "main": [
        {"label": "approve", "wait_for_input": {"info": {"question": "$ f'Approve {_.amount} EUR?'"}}},
        {"return": {"approved": "$ _.approved"}},
    ],
}
TOLERANCE_SECONDS = 300  # a signature older than this is refused (a replayed request)


def verify(secret: str, signature: str, body: bytes) -> bool:
    """Whether `Mint-Signature: t=...,v1=...` is the HMAC-SHA256 of `<t>.<body>` under `secret`, and recent."""
    parts = dict(part.split("=", 1) for part in signature.split(",") if "=" in part)
    if "t" not in parts or "v1" not in parts or not parts["t"].isdigit():
        return False
    expected = hmac.new(secret.encode(), f"{parts['t']}.".encode() + body, hashlib.sha256).hexdigest()
    fresh = abs(time.time() - int(parts["t"])) <= TOLERANCE_SECONDS
    return fresh and hmac.compare_digest(expected, parts["v1"])


class Receiver:
    """A webhook receiver on 127.0.0.1: answers 204 to what verifies (401 otherwise), and keeps each."""

    def __init__(self, secret: str):
        self.received: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                ok = verify(secret, self.headers.get("Mint-Signature", ""), body)
                delivery = self.headers.get("Mint-Delivery-Id")
                owner.received.append({"delivery": delivery, "verified": ok, **json.loads(body)})
                self.send_response(204 if ok else 401)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/webhooks"

    async def until(self, count: int) -> list[dict[str, Any]]:
        for _ in range(600):
            if len(self.received) >= count:
                return self.received
            await asyncio.sleep(0.1)
        raise RuntimeError(f"{len(self.received)} webhooks arrived within a minute, not {count}")


async def _json(request: Any) -> Any:
    response = await request
    response.raise_for_status()
    return response.json()


async def main(api: httpx.AsyncClient) -> list[dict[str, Any]]:
    """Run the approval task with a callback_url, approve it, and answer the webhooks received."""
    settings = await _json(api.get("/developer/settings"))
    receiver = Receiver(settings["webhook_secret"])
    agent = await _json(api.post("/agents", json={"name": "approver"}))
    task = await _json(api.post(f"/agents/{agent['id']}/tasks", json=TASK))
    body = {"input": {"amount": 120}, "callback_url": receiver.url}
    execution = await _json(api.post(f"/tasks/{task['id']}/executions", json=body))
    (waiting,) = await receiver.until(1)
    wait_id = waiting["waits"][0]["id"]
    answer = {"status": "running", "input": {"approved": True}, "wait_id": wait_id}
    await _json(api.put(f"/executions/{execution['id']}", json=answer))
    return await receiver.until(2)


async def _run() -> None:
    url = os.environ.get("MINT_API_URL", "http://127.0.0.1:8080")
    headers = {"Authorization": f"Bearer {os.environ['MINT_API_KEY']}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as api:
        for webhook in await main(api):
            detail = webhook.get("output", webhook.get("waits", webhook.get("error")))
            print(
                f"{webhook['delivery']}: {webhook['status']} {json.dumps(detail)} verified={webhook['verified']}"
            )


if __name__ == "__main__":
    asyncio.run(_run())
