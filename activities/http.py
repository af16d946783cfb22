"""The api_call tool: one HTTP request through httpx, after the egress check."""

from __future__ import annotations

from typing import Any

import httpx
from temporalio import activity

from activities import errors
from activities.egress import EgressPolicy, EgressRefused
from workflows.interpreter import CALL_API

MAX_RESPONSE_BYTES = 64 * 1024 * 1024
MAX_REDIRECTS = 5


class HttpActivities:
    def __init__(self, client: httpx.AsyncClient, egress: EgressPolicy):
        self.client = client
        self.egress = egress

    @activity.defn(name=CALL_API)
    async def call_api(self, request: dict[str, Any]) -> dict[str, Any]:
        """Returns {status_code, headers, content, json}; network errors and 5xx/429 retry via Temporal."""
        url = str(request.get("url", ""))
        method = str(request.get("method", "GET")).upper()
        for _ in range(MAX_REDIRECTS + 1):
            response = await self._send(method, url, request)
            if not (request.get("follow_redirects") and response.is_redirect):
                break
            # Follow by hand so that every hop passes the egress check.
            url = str(response.url.join(response.headers["location"]))
            method = "GET" if response.status_code == 303 else method
        error = errors.for_http_status(url, response.status_code)
        if error:
            raise error
        text = response.text[:MAX_RESPONSE_BYTES]
        try:
            body = response.json()
        except ValueError:
            body = None
        return {
            "status_code": response.status_code,
            "headers": dict(response.headers),
            "content": text,
            "json": body,
        }

    async def _send(self, method: str, url: str, request: dict[str, Any]) -> httpx.Response:
        try:
            await self.egress.check(url)
        except EgressRefused as exc:
            raise errors.permanent(str(exc), "EgressRefused") from None
        try:
            return await self.client.request(
                method,
                url,
                headers=request.get("headers"),
                params=request.get("params"),
                json=request.get("json"),
                content=request.get("content"),
                data=request.get("data"),
                timeout=float(request.get("timeout") or 60),
                follow_redirects=False,
            )
        except httpx.InvalidURL as exc:
            raise errors.permanent(f"bad URL {url!r}: {exc}", "BadToolCall") from None
