"""Retries and timeouts a task can set: per step, with task defaults, and for waits."""

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.helpers import run_task


class Flaky:
    """A local HTTP server that answers 500 `failures` times, then 200; `delay` seconds per answer."""

    def __init__(self, failures: int = 0, delay: float = 0.0):
        self.failures, self.delay, self.calls = failures, delay, 0
        self.keys: list[str | None] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                owner.calls += 1
                owner.keys.append(self.headers.get("Idempotency-Key"))
                time.sleep(owner.delay)
                status = 500 if owner.calls <= owner.failures else 404 if self.path == "/missing" else 200
                body = b'{"ok": true}'
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def flaky():
    servers: list[Flaky] = []

    def make(**kwargs) -> Flaky:
        servers.append(Flaky(**kwargs))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def _task(url: str, step_extra: dict | None = None, defaults: dict | None = None) -> dict:
    task = {
        "name": "call",
        "tools": [{"name": "fetch", "type": "api_call", "api_call": {"method": "GET", "url": url}}],
        "main": [{"tool": "fetch", "arguments": {}, **(step_extra or {})}],
    }
    if defaults:
        task["defaults"] = defaults
    return task


async def test_a_step_retries_until_the_server_recovers(api, flaky):
    server = flaky(failures=2)
    retry = {"max_attempts": 3, "initial_interval": 0.05, "backoff": 1}
    execution, rows = await run_task(api, _task(server.url, {"retry": retry}))
    assert execution["status"] == "succeeded", execution
    assert execution["output"]["json"] == {"ok": True} and server.calls == 3
    assert rows[1]["type"] == "step" and rows[1]["metadata"] == {"attempts": 3}
    assert len(set(server.keys)) == 1 and server.keys[0]  # one idempotency key across the attempts


async def test_a_step_gives_up_after_max_attempts(api, flaky):
    server = flaky(failures=5)
    retry = {"max_attempts": 2, "initial_interval": 0.05}
    execution, rows = await run_task(api, _task(server.url, {"retry": retry}))
    assert execution["status"] == "failed" and "answered 500" in execution["error"]
    assert server.calls == 2 and rows[-1]["type"] == "error"


async def test_task_defaults_apply_and_steps_override_them(api, flaky):
    server = flaky(failures=3)
    defaults = {"retry": {"max_attempts": 2, "initial_interval": 0.05}}
    failed, _ = await run_task(api, _task(server.url, defaults=defaults))
    assert failed["status"] == "failed" and server.calls == 2
    server.calls = 0
    step = {"retry": {"max_attempts": 4}}
    succeeded, _ = await run_task(api, _task(server.url, step, defaults=defaults))
    assert succeeded["status"] == "succeeded" and server.calls == 4


async def test_a_step_timeout_bounds_each_attempt(api, flaky):
    server = flaky(delay=3)
    step = {"timeout": 0.5, "retry": {"max_attempts": 1}}
    execution, _ = await run_task(api, _task(server.url, step))
    assert execution["status"] == "failed" and "timeout" in execution["error"].lower(), execution


async def test_client_errors_are_answers_not_failures(api, flaky):
    server = flaky()
    execution, _ = await run_task(api, _task(server.url + "missing"))
    assert execution["status"] == "succeeded" and server.calls == 1
    assert execution["output"]["status_code"] == 404


@pytest.mark.parametrize(
    "wait, status, output",
    [
        (
            {"timeout": 0.5, "on_timeout": "continue", "default": {"approved": False}},
            "succeeded",
            {"approved": False},
        ),
        ({"timeout": 0.5}, "failed", None),
    ],
)
async def test_wait_for_input_timeout(api, wait, status, output):
    task = {"name": "wait", "main": [{"wait_for_input": {"info": {"q": "$ 'ok?'"}, **wait}}]}
    execution, rows = await run_task(api, task)
    assert execution["status"] == status, execution
    if output is not None:
        assert execution["output"] == output
        assert [r["type"] for r in rows] == ["init", "wait", "resume", "step", "finish"]
        assert rows[2]["metadata"] == {"timed_out": True, "wait_seq": 2}
    else:
        assert "no input within 0.5 seconds" in execution["error"]


async def test_timeout_and_retry_are_refused_on_pure_steps(api):
    from tests.helpers import create_agent

    agent = await create_agent(api)
    response = await api.post(
        f"/agents/{agent['id']}/tasks", json={"name": "t", "main": [{"evaluate": {"x": "1"}, "timeout": 5}]}
    )
    assert response.status_code == 422
    assert any(p["loc"] == "main[0].timeout" for p in response.json()["error"]["details"])
