"""`mint up`'s UI gateway (process/ui_gateway.py) without a stack: what it refuses before forwarding."""

from __future__ import annotations

import asyncio

from process.ui_gateway import _GatewayApp

PORT = 18233


def _serve(app: _GatewayApp, host: str, chunks: list[bytes]) -> list[dict[str, object]]:
    scope = {
        "type": "http",
        "method": "POST",
        "raw_path": b"/codec/decode",
        "query_string": b"",
        "headers": [(b"host", host.encode())],
    }
    messages = [
        {"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)
    ]
    sent: list[dict[str, object]] = []

    async def receive() -> dict[str, object]:
        return messages.pop(0)

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent


def test_a_body_over_the_limit_is_refused_before_anything_is_forwarded():
    # Nothing listens on port 9: a forwarded request would answer 502, not 413.
    app = _GatewayApp(PORT, "http://127.0.0.1:9", "http://127.0.0.1:9", max_body_bytes=10)
    sent = _serve(app, f"127.0.0.1:{PORT}", [b"x" * 6, b"x" * 6])
    assert sent[0]["status"] == 413


def test_a_request_for_another_host_is_refused():
    app = _GatewayApp(PORT, "http://127.0.0.1:9", "http://127.0.0.1:9", max_body_bytes=10)
    assert _serve(app, f"evil.example:{PORT}", [b""])[0]["status"] == 421
