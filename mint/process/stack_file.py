"""Where client commands (`mint run`, `mint ls`, ...) find the stack: `mint up` records its API URL in its
data dir, beside the API key it keeps there; MINT_API_URL / MINT_API_KEY override both."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import click
import httpx

STACK_FILE = "stack.json"


@dataclass(frozen=True)
class StackAddress:
    url: str
    key: str


def record_stack(data_dir: Path, api_url: str) -> None:
    """Say where this data dir's `mint up` serves (written owner-only; it names no secret)."""
    path = data_dir / STACK_FILE
    path.write_text(json.dumps({"api_url": api_url, "pid": os.getpid()}) + "\n")


def find_stack(data_dir: Path, url: str | None = None) -> StackAddress:
    """The API URL and key for a client command: `url` (a flag), else MINT_API_URL, else what `mint up`
    recorded in data_dir, else the default port; the key from MINT_API_KEY or data_dir."""
    data_dir = data_dir.resolve()
    recorded = _recorded(data_dir)
    port = os.environ.get("MINT_API_PORT") or "8080"
    base = url or os.environ.get("MINT_API_URL") or recorded.get("api_url") or f"http://127.0.0.1:{port}"
    key = os.environ.get("MINT_API_KEY") or _read(data_dir / "api_key")
    if not key:
        raise click.ClickException(
            f"no API key: `mint up` keeps one in {data_dir} (use --data-dir) or set MINT_API_KEY"
        )
    return StackAddress(base.rstrip("/"), key)


def _recorded(data_dir: Path) -> dict:
    text = _read(data_dir / STACK_FILE)
    try:
        return json.loads(text) if text else {}
    except ValueError:
        return {}


def _read(path: Path) -> str | None:
    return path.read_text().strip() if path.exists() else None


def api_client(stack: StackAddress) -> httpx.Client:
    """An HTTP client for the stack's API whose failures to connect end the command with one line saying
    what to do, instead of a traceback."""
    return httpx.Client(
        base_url=stack.url,
        headers={"Authorization": f"Bearer {stack.key}"},
        timeout=30,
        transport=_OneLineErrors(stack.url),
    )


class _OneLineErrors(httpx.HTTPTransport):
    def __init__(self, url: str):
        super().__init__()
        self.url = url

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        try:
            return super().handle_request(request)
        except (httpx.ConnectError, httpx.ConnectTimeout):
            raise click.ClickException(
                f"cannot reach the Mint API at {self.url}: start it with `mint up` (or set MINT_API_URL)"
            ) from None
