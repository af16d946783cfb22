"""A local OpenAI-compatible model server that notes when it answers: when each request arrived, when its
first token left, and when its last byte left (time.perf_counter, so a client in this process can set its
own timings beside them). A streamed answer sends its first token at once, then the rest a piece every
`gap` seconds, as a provider does; keep-alive, so a client's connection setup is not counted per call."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WORDS = ("Hello", " from", " the", " local", " model", ".")


@dataclass(frozen=True)
class Served:
    """One answer's times, as the server saw them: its own time to first token and to the end."""

    arrived: float
    first_token: float
    done: float

    @property
    def first_token_ms(self) -> float:
        return (self.first_token - self.arrived) * 1000

    @property
    def answer_ms(self) -> float:
        return (self.done - self.arrived) * 1000


def _chunk(delta: dict[str, str], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    data = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0, "model": "bench"}
    return f"data: {json.dumps({**data, 'choices': [choice]})}\n\n".encode()


USAGE = {"prompt_tokens": 10, "completion_tokens": len(WORDS), "total_tokens": 10 + len(WORDS)}


def _answer() -> bytes:
    message = {"role": "assistant", "content": "".join(WORDS)}
    return json.dumps(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "created": 0,
            "model": "bench",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": USAGE,
        }
    ).encode()


class TimedModelServer:
    """Serves chat completions on 127.0.0.1 until closed; `served` holds each answer's times, in order."""

    def __init__(self, gap: float = 0.002):
        self.served: list[Served] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, chunked streams
            disable_nagle_algorithm = True

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                arrived = time.perf_counter()
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                if body.get("stream"):
                    usage = bool((body.get("stream_options") or {}).get("include_usage"))
                    first, done = self._stream(gap, usage)
                else:
                    first = done = self._send(_answer())
                owner.served.append(Served(arrived, first, done))

            def _send(self, content: bytes) -> float:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)
                self.wfile.flush()
                return time.perf_counter()

            def _stream(self, pause: float, usage: bool) -> tuple[float, float]:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self._piece(_chunk({"role": "assistant", "content": WORDS[0]}))
                first = time.perf_counter()
                for word in WORDS[1:]:
                    time.sleep(pause)
                    self._piece(_chunk({"content": word}))
                self._piece(_chunk({}, "stop"))
                if usage:
                    head = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "model": "bench"}
                    self._piece(f"data: {json.dumps({**head, 'choices': [], 'usage': USAGE})}\n\n".encode())
                self._piece(b"data: [DONE]\n\n")
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
                return first, time.perf_counter()

            def _piece(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def last(self) -> Served:
        return self.served[-1]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> TimedModelServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
