"""A fake browser that speaks enough of the Chrome DevTools Protocol (CDP) for tests/test_remote_browser.py: a
real websockets server on 127.0.0.1, on a loop in a thread of its own (so that the test's loop and the Mint
stack's can both reach it), recording every message it receives and each handshake's Host header.

- Target.getTargets lists `targets` (one about:blank page unless a test sets others); Target.createTarget adds
  a page; Target.attachToTarget answers `session-<targetId>`, and only with `flatten: true`.
- Page.navigate: a URL on `unreachable.example` answers errorText; any other replaces the page's document (its
  window globals go) and Page.loadEventFired follows: after the answer, or before it for a URL holding
  `early-load`, after LOAD_DELAY seconds for one holding `slow-load` (with another session's load event sent
  at once, which must not count), never for one holding `never-loads`. Page.reload: the same, after the
  answer.
- Page.captureScreenshot answers `screenshot` (a 1x1 PNG unless a test sets another).
- Runtime.evaluate understands Mint's two cursor expressions: `window.__mintCursor = [x, y]` and the read,
  which answers the global or the viewport's centre (`viewport`, set by Emulation.setDeviceMetricsOverride).
- Input.* and Page.enable answer {}; a method in `refuse`, or one not listed here, answers a CDP error.
- `reject` set to a status answers the handshake with it instead of upgrading.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import re
import threading
from http import HTTPStatus
from typing import Any

from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

# The smallest valid PNG: one transparent pixel.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
LOAD_DELAY = 0.4
SET_CURSOR = re.compile(r"window\.__mintCursor = \[(\d+), (\d+)\]")


class FakeBrowser:
    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        self.hosts: list[str] = []  # each handshake's Host header
        self.targets: list[dict[str, Any]] = [{"targetId": "page-1", "type": "page", "url": "about:blank"}]
        self.globals: dict[str, dict[str, Any]] = {}  # target -> its window globals
        self.viewport = (800, 600)
        self.screenshot = base64.b64encode(PNG).decode()
        self.refuse: set[str] = set()
        self.reject: int | None = None
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        assert self._ready.wait(10), "the fake browser did not start"

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/devtools/browser/fake-browser"

    def commands(self) -> list[tuple[str, dict[str, Any], str | None]]:
        """What was received, as (method, params, sessionId)."""
        return [(m["method"], m.get("params", {}), m.get("sessionId")) for m in self.received]

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _stop(self) -> None:
        self._server.close()
        await self._server.wait_closed()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._start())
        self._loop.run_forever()

    async def _start(self) -> None:
        # (close_timeout: a client that has just dropped its end may not have let its loop close the socket)
        self._server = await serve(
            self._serve, "127.0.0.1", 0, process_request=self._handshake, max_size=None, close_timeout=0.2
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()

    def _handshake(self, connection: ServerConnection, request: Request) -> Response | None:
        self.hosts.append(request.headers.get("Host", ""))
        return connection.respond(HTTPStatus(self.reject), "refused\n") if self.reject else None

    async def _serve(self, socket: ServerConnection) -> None:
        with contextlib.suppress(ConnectionClosed):  # (Mint drops the connection once it has its answer)
            async for raw in socket:
                message = json.loads(raw)
                self.received.append(message)
                await self._answer(socket, message)

    async def _answer(self, socket: ServerConnection, message: dict[str, Any]) -> None:
        method, params, session = message["method"], message.get("params", {}), message.get("sessionId")
        reply: dict[str, Any] = {"id": message["id"], **({"sessionId": session} if session else {})}

        async def send(body: dict[str, Any]) -> None:
            await socket.send(json.dumps(body))

        async def loaded(of: str | None = session) -> None:
            await send({"method": "Page.loadEventFired", "params": {"timestamp": 1.0}, "sessionId": of})

        handler = getattr(self, "_" + method.replace(".", "_"), None)
        if method in self.refuse or handler is None:
            await send({**reply, "error": {"code": -32601, "message": f"'{method}' wasn't found"}})
            return
        target = (session or "").removeprefix("session-")
        result = handler(params, target)
        url = params.get("url", "") if method == "Page.navigate" else "reload"
        if method not in ("Page.navigate", "Page.reload") or "errorText" in result:
            await send({**reply, "result": result})
            return
        await send(
            {"method": "Page.frameStartedLoading", "params": {"frameId": target}, "sessionId": session}
        )
        if "early-load" in url:
            await loaded()
        await send({**reply, "result": result})
        if "slow-load" in url:
            await loaded("another-session")
            await asyncio.sleep(LOAD_DELAY)
        if "early-load" not in url and "never-loads" not in url:
            await loaded()

    def _Target_getTargets(self, params: dict[str, Any], target: str) -> dict[str, Any]:
        return {"targetInfos": self.targets}

    def _Target_createTarget(self, params: dict[str, Any], target: str) -> dict[str, Any]:
        new = {"targetId": f"page-{len(self.targets) + 1}", "type": "page", "url": params["url"]}
        self.targets.append(new)
        return {"targetId": new["targetId"]}

    def _Target_attachToTarget(self, params: dict[str, Any], target: str) -> dict[str, Any]:
        assert params.get("flatten") is True, "the fake speaks flattened sessions only"
        return {"sessionId": f"session-{params['targetId']}"}

    def _Page_enable(self, params: dict[str, Any], target: str) -> dict[str, Any]:
        return {}

    def _Page_navigate(self, params: dict[str, Any], target: str) -> dict[str, Any]:
        if "unreachable.example" in params["url"]:
            return {"frameId": target, "errorText": "net::ERR_NAME_NOT_RESOLVED"}
        self.globals.pop(target, None)
        return {"frameId": target, "loaderId": f"loader-{len(self.received)}"}

    def _Page_reload(self, params: dict[str, Any], target: str) -> dict[str, Any]:
        self.globals.pop(target, None)
        return {}

    def _Page_captureScreenshot(self, params: dict[str, Any], target: str) -> dict[str, Any]:
        return {"data": self.screenshot}

    def _Emulation_setDeviceMetricsOverride(self, params: dict[str, Any], target: str) -> dict[str, Any]:
        self.viewport = (params["width"], params["height"])
        return {}

    def _Runtime_evaluate(self, params: dict[str, Any], target: str) -> dict[str, Any]:
        expression, page = params["expression"], self.globals.setdefault(target, {})
        if found := SET_CURSOR.fullmatch(expression):
            page["__mintCursor"] = [int(found.group(1)), int(found.group(2))]
            value = page["__mintCursor"]
        elif "window.__mintCursor" in expression and "innerWidth" in expression:
            value = page.get("__mintCursor") or [self.viewport[0] // 2, self.viewport[1] // 2]
        else:
            return {"result": {"type": "undefined"}, "exceptionDetails": {"text": "not understood"}}
        return {"result": {"type": "object", "value": value}}

    def _Input_dispatchMouseEvent(self, params: dict[str, Any], target: str) -> dict[str, Any]:
        return {}

    def _Input_dispatchKeyEvent(self, params: dict[str, Any], target: str) -> dict[str, Any]:
        return {}

    def _Input_insertText(self, params: dict[str, Any], target: str) -> dict[str, Any]:
        return {}
