"""The Temporal UI as `mint up` serves it: the dev server's UI, on a loopback port of its own, behind a gateway
on the UI's port that also serves Mint's codec server (`/codec/...`, forwarded to the API).

Why a gateway: the UI calls the codec server from the browser, and the dev server cannot tell it to send
cookies with a call to another origin (it has `--ui-codec-endpoint` but no "include credentials"). Served
from the UI's own origin, the codec calls are same-origin, so the browser sends the operator's session cookie
(set by signing in at `/codec/sign-in`, on this origin) with them, and nobody else's browser has one. The
codec server still decides who is the operator (api/operator_auth.py); this only puts it where the UI's
calls can carry the proof.

The gateway answers only requests addressed to it by its loopback names (127.0.0.1 or localhost and its
port): a page whose host name merely resolves here (DNS rebinding) cannot drive the UI through it.
"""

from __future__ import annotations

import socket
import threading

import httpx
import uvicorn
from starlette.types import Message, Receive, Scope, Send

from infra.telemetry.metrics import free_loopback_port

# Said by one connection about itself, never forwarded (RFC 9110, section 7.6.1).
_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer"}
    | {"transfer-encoding", "upgrade"}
)


def sign_in_link(port: int) -> str:
    """A link that signs one browser in to the UI on `port`, once (api/operator_auth.py sign_in_code): the
    code is in the fragment, which the browser keeps to itself, and the page posts it."""
    from api.operator_auth import sign_in_code

    return f"http://127.0.0.1:{port}/codec/sign-in#{sign_in_code()}"


class UiGateway:
    """Serves `port` on 127.0.0.1, in a thread of its own: `/codec` and below from `api_url`, everything else
    from the dev server's UI, which is to listen on `upstream_port` (a free loopback port) and call
    `codec_endpoint`. `start` binds the port at once: a busy one is a RuntimeError."""

    def __init__(self, port: int, api_url: str, max_body_bytes: int):
        self.port = port
        self.upstream_port = free_loopback_port()
        self.codec_endpoint = f"http://127.0.0.1:{port}/codec"
        app = _GatewayApp(port, f"http://127.0.0.1:{self.upstream_port}", api_url, max_body_bytes)
        self._server = uvicorn.Server(
            uvicorn.Config(
                app,
                log_config=None,
                access_log=False,
                lifespan="off",
                server_header=False,  # the UI's own headers, not a second server and date
                date_header=False,
            )
        )
        self._thread = threading.Thread(target=self._run, name="temporal-ui-gateway", daemon=True)
        self._socket: socket.socket | None = None

    def start(self) -> UiGateway:
        sock = socket.socket()
        try:
            sock.bind(("127.0.0.1", self.port))
        except OSError as exc:
            sock.close()
            raise RuntimeError(f"the Temporal UI's port {self.port} is busy ({exc.strerror})") from None
        self._socket = sock
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)

    def _run(self) -> None:
        assert self._socket is not None
        self._server.run(sockets=[self._socket])


class _GatewayApp:
    """The gateway's ASGI app: each request forwarded as it came (its Host too, so that the API builds
    links on this origin), each answer streamed back."""

    def __init__(self, port: int, ui_url: str, api_url: str, max_body_bytes: int):
        self._max_body = max_body_bytes  # the API's own limit: a body is held whole before it is forwarded
        self._hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}
        self._ui_url, self._api_url = ui_url.rstrip("/"), api_url.rstrip("/")
        self._http: httpx.AsyncClient | None = None  # made in the server's event loop, in its thread

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        host = next((v for k, v in headers if k == "host"), "")
        if host not in self._hosts:
            await _answer(
                send, 421, b"this is the Temporal UI of `mint up`: address it as 127.0.0.1 or localhost"
            )
            return
        body = await _body(receive, self._max_body)
        if body is None:
            await _answer(send, 413, b"the request body is larger than MINT_MAX_BODY_BYTES")
            return
        path = scope["raw_path"].decode("latin-1")
        query = scope["query_string"].decode("latin-1")
        upstream = self._api_url if path == "/codec" or path.startswith("/codec/") else self._ui_url
        request = self._client().build_request(
            scope["method"],
            upstream + path + (f"?{query}" if query else ""),
            headers=[(k, v) for k, v in headers if k not in _HOP_BY_HOP],
            content=body,
        )
        try:
            answer = await self._client().send(request, stream=True)
        except httpx.HTTPError as exc:
            await _answer(send, 502, f"the Temporal UI is not answering: {type(exc).__name__}".encode())
            return
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": answer.status_code,
                    "headers": [
                        (k, v) for k, v in answer.headers.raw if k.lower().decode() not in _HOP_BY_HOP
                    ],
                }
            )
            async for chunk in answer.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            await answer.aclose()

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            # Nothing from the environment (no proxy, no .netrc): both upstreams are on this machine.
            self._http = httpx.AsyncClient(timeout=httpx.Timeout(60, connect=5), trust_env=False)
        return self._http


async def _body(receive: Receive, limit: int) -> bytes | None:
    """The whole request body, or None once it passes `limit` bytes (the rest is not read)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message: Message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


async def _answer(send: Send, status: int, text: bytes) -> None:
    await send(
        {"type": "http.response.start", "status": status, "headers": [(b"content-type", b"text/plain")]}
    )
    await send({"type": "http.response.body", "body": text})
