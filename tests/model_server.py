"""A scripted fake model on 127.0.0.1 that the real OpenAI and Anthropic SDKs can talk to unchanged."""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    content: str | None = None
    tool_calls: list[tuple[str, dict]] = field(default_factory=list)  # (tool name, arguments)
    prompt_tokens: int | None = None  # default: a rough count of the request
    completion_tokens: int | None = None  # default: a rough count of the reply
    status: int = 200  # anything else answers with the provider's error body; `content` is its message
    finish_reason: str | None = None  # OpenAI names; translated for Anthropic, whose own names pass through
    # Streamed answers only: seconds before each piece of text after the first, and an event the stream waits
    # for (up to 30 s) after its first piece, so a test can read what came before the rest is sent.
    delay: float = 0.0
    hold: threading.Event | None = None

    def pause(self, index: int) -> None:
        """Before the text piece `index` goes out: hold after the first, then wait `delay`."""
        if index == 1 and self.hold is not None:
            self.hold.wait(30)
        if index >= 1 and self.delay:
            time.sleep(self.delay)

    @property
    def paced(self) -> bool:
        return self.hold is not None or self.delay > 0


@dataclass
class Call:
    provider: str  # "openai" or "anthropic"
    body: dict
    headers: dict[str, str]  # names lower-cased, as HTTP treats them case-insensitively
    messages: list[dict]  # the conversation in OpenAI chat format, whichever provider was asked
    tools: list[dict]  # {"name", "description", "parameters"}
    model: str


Script = Callable[[Call], Reply | str]

# Anthropic's error type names; the SDKs pick their exception class from the status alone, so OpenAI reuses them.
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_ANTHROPIC_STOP = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}


def _text(content: Any) -> str:
    """The text of a message's content, whether a plain string or a list of typed parts/blocks."""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if part.get("type") == "text")


def _rough_tokens(text: str) -> int:
    return len(text) // 4 + 1


def _pieces(text: str, size: int = 8) -> list[str]:
    # Several small deltas per field, so clients' delta assembly is really exercised.
    return [text[i : i + size] for i in range(0, len(text), size)]


def _error_body(provider: str, status: int, message: str) -> dict:
    kind = _ERROR_TYPES.get(status, "api_error")
    if provider == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}


def _from_openai(body: dict) -> tuple[list[dict], list[dict]]:
    messages = []
    for message in body.get("messages") or []:
        message = dict(message)
        parts = message.get("content")
        if isinstance(parts, list) and all(part.get("type") == "text" for part in parts):
            message["content"] = _text(parts)  # text-only part lists read more easily as one string
        messages.append(message)
    tools = [
        {"name": f["name"], "description": f.get("description", ""), "parameters": f.get("parameters", {})}
        for f in (tool["function"] for tool in body.get("tools") or [] if "function" in tool)
    ]
    return messages, tools


def _from_anthropic(body: dict) -> tuple[list[dict], list[dict]]:
    messages: list[dict] = []
    if system := _text(body.get("system")):
        messages.append({"role": "system", "content": system})
    for message in body.get("messages") or []:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        text = _text(blocks)
        # Anthropic carries tool results as blocks of a user turn; OpenAI gives each its own "tool" message.
        results = [block for block in blocks if block.get("type") == "tool_result"]
        for block in results:
            messages.append(
                {"role": "tool", "tool_call_id": block["tool_use_id"], "content": _text(block.get("content"))}
            )
        calls = [
            {
                "id": block["id"],
                "type": "function",
                "function": {"name": block["name"], "arguments": json.dumps(block.get("input", {}))},
            }
            for block in blocks
            if block.get("type") == "tool_use"
        ]
        if calls:
            messages.append({"role": "assistant", "content": text or None, "tool_calls": calls})
        elif text or not results:
            messages.append({"role": message["role"], "content": text})
    tools = [
        {"name": t["name"], "description": t.get("description", ""), "parameters": t.get("input_schema", {})}
        for t in body.get("tools") or []
        if "name" in t
    ]
    return messages, tools


def echo(call: Call) -> Reply:
    last: dict = next((m for m in reversed(call.messages) if m.get("role") == "user"), {})
    return Reply(content=f"echo: {_text(last.get('content'))}")


@dataclass
class _Turn:
    """One reply resolved to what goes on the wire: ids, token counts and the finish reason filled in."""

    id: str
    model: str
    text: str | None
    calls: list[tuple[str, str, str]]  # (id, name, arguments as JSON)
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str
    created: int = field(default_factory=lambda: int(time.time()))
    pause: Callable[[int], None] = lambda index: None  # before each text piece (Reply.pause)

    def openai(self) -> dict:
        message: dict[str, Any] = {"role": "assistant", "content": self.text, "refusal": None}
        if self.calls:
            message["tool_calls"] = [
                {"id": id_, "type": "function", "function": {"name": name, "arguments": args}}
                for id_, name, args in self.calls
            ]
        choice = {"index": 0, "message": message, "finish_reason": self.finish_reason, "logprobs": None}
        return {**self._openai_head("chat.completion"), "choices": [choice], "usage": self._openai_usage()}

    def openai_stream(self, include_usage: bool) -> Iterator[str]:
        def chunk(delta: dict, finish: str | None = None) -> str:
            choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
            extra: dict[str, Any] = {"usage": None} if include_usage else {}
            return _sse(None, {**self._openai_head("chat.completion.chunk"), "choices": [choice], **extra})

        yield chunk({"role": "assistant", "content": ""})
        for index, piece in enumerate(_pieces(self.text or "")):
            self.pause(index)
            yield chunk({"content": piece})
        for index, (id_, name, args) in enumerate(self.calls):
            function = {"name": name, "arguments": ""}
            start = {"index": index, "id": id_, "type": "function", "function": function}
            yield chunk({"tool_calls": [start]})
            for piece in _pieces(args):
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        yield chunk({}, self.finish_reason)
        if include_usage:
            usage = {"usage": self._openai_usage()}
            yield _sse(None, {**self._openai_head("chat.completion.chunk"), "choices": [], **usage})
        yield "data: [DONE]\n\n"

    def _openai_head(self, kind: str) -> dict:
        return {"id": self.id, "object": kind, "created": self.created, "model": self.model}

    def _openai_usage(self) -> dict:
        prompt, completion = self.prompt_tokens, self.completion_tokens
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

    def anthropic(self) -> dict:
        return {
            **self._anthropic_head(),
            "content": self._blocks(),
            "stop_reason": self.finish_reason,
            "usage": {"input_tokens": self.prompt_tokens, "output_tokens": self.completion_tokens},
        }

    def anthropic_stream(self) -> Iterator[str]:
        def event(kind: str, **fields: Any) -> str:
            return _sse(kind, {"type": kind, **fields})

        usage = {"input_tokens": self.prompt_tokens, "output_tokens": 0}
        start = {**self._anthropic_head(), "content": [], "stop_reason": None, "usage": usage}
        yield event("message_start", message=start)
        for index, block in enumerate(self._blocks()):
            if block["type"] == "text":
                empty: dict[str, Any] = {"type": "text", "text": ""}
                deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"])]
            else:  # the input arrives as JSON fragments, as a real model writes it
                empty = {**block, "input": {}}
                pieces = _pieces(json.dumps(block["input"]))
                deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces]
            yield event("content_block_start", index=index, content_block=empty)
            for number, delta in enumerate(deltas):
                if delta["type"] == "text_delta":
                    self.pause(number)
                yield event("content_block_delta", index=index, delta=delta)
            yield event("content_block_stop", index=index)
        stop = {"stop_reason": self.finish_reason, "stop_sequence": None}
        yield event("message_delta", delta=stop, usage={"output_tokens": self.completion_tokens})
        yield event("message_stop")

    def _anthropic_head(self) -> dict:
        return {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "stop_sequence": None,
        }

    def _blocks(self) -> list[dict]:
        blocks: list[dict] = [{"type": "text", "text": self.text}] if self.text else []
        for id_, name, args in self.calls:
            blocks.append({"type": "tool_use", "id": id_, "name": name, "input": json.loads(args)})
        return blocks


@dataclass
class _Paced:
    """A streamed answer sent event by event as it is made (a Reply with `delay` or `hold`)."""

    events: Iterator[str]


def _sse(event: str | None, data: dict) -> str:
    return (f"event: {event}\n" if event else "") + f"data: {json.dumps(data)}\n\n"


def _embeddings(body: dict) -> dict:
    """OpenAI's embeddings answer: each text as a bag of words hashed into `dimensions` slots, normalised, so
    texts that share words are near each other (enough to test search through the real SDK)."""
    size = int(body.get("dimensions") or 1536)
    data = []
    for index, text in enumerate(body["input"]):
        vector = [0.0] * size
        for word in str(text).lower().split():
            vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % size] += 1.0
        norm = sum(v * v for v in vector) ** 0.5 or 1.0
        data.append({"object": "embedding", "index": index, "embedding": [v / norm for v in vector]})
    tokens = sum(len(str(t).split()) for t in body["input"])
    return {
        "object": "list",
        "model": body.get("model"),
        "data": data,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


class ModelServer:
    """Answers chat requests with `script(call)` on 127.0.0.1 until closed; every request lands in `calls`."""

    def __init__(self, script: Script | None = None, models: list[str] | None = None):
        self.script = script or echo
        self.models = models or ["gpt-4o-mini", "gpt-4o"]
        self.calls: list[Call] = []
        self.embedding_calls: list[dict] = []  # bodies of POST /v1/embeddings
        self._ids = itertools.count(1)  # server-wide, so ids never repeat across a conversation's turns
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                if self.path.split("?")[0] != "/v1/models":
                    return self._json(404, _error_body("openai", 404, f"no route GET {self.path}"))
                data = [{"id": m, "object": "model", "created": 0, "owned_by": "mint"} for m in owner.models]
                self._json(200, {"object": "list", "data": data})

            def do_POST(self) -> None:  # noqa: N802
                routes = {"/v1/chat/completions": "openai", "/v1/messages": "anthropic"}
                provider = routes.get(self.path.split("?")[0])
                if self.path.split("?")[0] == "/v1/embeddings":
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                    owner.embedding_calls.append(body)
                    return self._json(200, _embeddings(body))
                if provider is None:
                    return self._json(404, _error_body("openai", 404, f"no route POST {self.path}"))
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                except ValueError as exc:
                    return self._json(400, _error_body(provider, 400, f"body is not JSON: {exc}"))
                headers = {name.lower(): value for name, value in self.headers.items()}
                status, answer = owner._answer(provider, body, headers)
                if isinstance(answer, dict):
                    return self._json(status, answer)
                if isinstance(answer, _Paced):
                    return self._send_paced(answer)
                self._send(status, "text/event-stream", "".join(answer).encode())

            def _send_paced(self, events: _Paced) -> None:
                """Each event as it is made, the body ended by closing the connection (HTTP/1.0)."""
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                self.close_connection = True
                for event in events.events:
                    self.wfile.write(event.encode())
                    self.wfile.flush()

            def _json(self, status: int, body: dict) -> None:
                self._send(status, "application/json", json.dumps(body).encode())

            def _send(self, status: int, content_type: str, content: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            def log_message(self, *args: object) -> None:
                pass

        class Listener(ThreadingHTTPServer):
            request_queue_size = 256  # many agents calling at once must not overflow the listen backlog

        self._server = Listener(("127.0.0.1", 0), Handler)
        # A short poll keeps close() quick; the default half second would dominate a test's run time.
        threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True).start()
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.openai_base_url = f"{self.url}/v1"
        self.anthropic_base_url = self.url

    def _answer(
        self, provider: str, body: dict, headers: dict[str, str]
    ) -> tuple[int, dict | Iterator[str] | _Paced]:
        messages, tools = (_from_openai if provider == "openai" else _from_anthropic)(body)
        call = Call(provider, body, headers, messages, tools, str(body.get("model", "")))
        self.calls.append(call)  # before the script runs, so a failing script's request is still on record
        try:
            reply = self.script(call)
        except Exception as exc:  # a bug in a test's script must reach the client, not vanish in a thread
            return 500, _error_body(provider, 500, f"script raised {type(exc).__name__}: {exc}")
        if isinstance(reply, str):
            reply = Reply(content=reply)
        if reply.status != 200:
            message = reply.content or HTTPStatus(reply.status).phrase
            return reply.status, _error_body(provider, reply.status, message)

        prefix = "call_" if provider == "openai" else "toolu_"
        calls = [(f"{prefix}{next(self._ids)}", name, json.dumps(args)) for name, args in reply.tool_calls]
        finish = reply.finish_reason or ("tool_calls" if calls else "stop")
        prompt = "".join(
            _text(m.get("content")) + "".join(c["function"]["arguments"] for c in m.get("tool_calls") or [])
            for m in messages
        )
        turn = _Turn(
            id=f"chatcmpl-{next(self._ids)}" if provider == "openai" else f"msg_{next(self._ids)}",
            model=call.model,
            text=reply.content,
            calls=calls,
            prompt_tokens=_rough_tokens(prompt) if reply.prompt_tokens is None else reply.prompt_tokens,
            completion_tokens=(
                _rough_tokens((reply.content or "") + "".join(args for _, _, args in calls))
                if reply.completion_tokens is None
                else reply.completion_tokens
            ),
            finish_reason=finish if provider == "openai" else _ANTHROPIC_STOP.get(finish, finish),
            pause=reply.pause,
        )
        if not body.get("stream"):
            return 200, turn.openai() if provider == "openai" else turn.anthropic()
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        events = turn.openai_stream(include_usage) if provider == "openai" else turn.anthropic_stream()
        return 200, _Paced(events) if reply.paced else events

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> ModelServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
