"""A loopback HTTP server for tests and benchmarks: answers come from a function, requests are recorded."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


Answer = tuple[int, dict[str, str], bytes]


def ok(_: Request) -> Answer:
    return 200, {}, b"ok"


class LocalServer:
    """Serves `respond(request) -> (status, headers, body)` on 127.0.0.1 until closed."""

    def __init__(self, respond: Callable[[Request], Answer] = ok):
        self.requests: list[Request] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            disable_nagle_algorithm = True  # TCP_NODELAY: else keep-alive costs 40 ms a request (DESIGN.md 6)

            def _answer(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                request = Request(self.command, self.path, dict(self.headers), body)
                owner.requests.append(request)
                status, headers, content = respond(request)
                self.send_response(status)
                for name, value in {**headers, "Content-Length": str(len(content))}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(content)

            do_GET = do_POST = do_PUT = do_DELETE = _answer  # noqa: N815 - http.server's naming

            def log_message(self, *args: object) -> None:
                pass

        class Listener(ThreadingHTTPServer):
            request_queue_size = 256  # many connections at once must not overflow the listen backlog

        self._server = Listener(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> LocalServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class DripServer:
    """Answers every GET with 200 and `size` bytes of body, one byte every `interval` seconds. `sent` counts
    the bytes it managed to send; `dropped` is set when the client hangs up before the last one."""

    def __init__(self, size: int, interval: float):
        self.sent = 0
        self.dropped = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            disable_nagle_algorithm = True

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                self.send_response(200)
                self.send_header("Content-Length", str(size))
                self.end_headers()
                try:
                    for _ in range(size):
                        time.sleep(interval)
                        self.wfile.write(b"x")
                        owner.sent += 1
                except OSError:  # a broken pipe or a reset: the client closed the connection
                    owner.dropped.set()

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(
            ("127.0.0.1", 0), Handler
        )  # daemon threads: close() waits for none
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> DripServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
