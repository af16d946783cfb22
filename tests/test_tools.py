"""api_call tools that must not run: refused addresses and schemes end the execution clearly, never stuck;
timeouts that are whole-call deadlines within MINT_MAX_TOOL_TIMEOUT_SECONDS; credentials that stay with their
origin across redirects."""

import asyncio
import time

import httpx
import pytest

from tests.helpers import create_agent, run_task
from tests.local_http import Answer, DripServer, LocalServer, Request
from workflows.calls import DEADLINE_SLACK_SECONDS, PLACE_WAIT_SECONDS


def _task(url: str) -> dict:
    return {
        "name": "call",
        "tools": [{"name": "fetch", "type": "api_call", "api_call": {"method": "GET", "url": url}}],
        "main": [{"tool": "fetch", "arguments": {}}],
    }


@pytest.mark.parametrize(
    "url, reason",
    [
        ("http://10.1.2.3/", "not a public address"),
        ("http://169.254.169.254/latest/meta-data/", "not a public address"),
        ("http://[::1]:9/", "not a public address"),
        ("file:///etc/passwd", "only http and https"),
        ("gopher://127.0.0.1/", "only http and https"),
    ],
)
async def test_refused_destinations_fail_the_execution(api, url, reason):
    execution, rows = await run_task(api, _task(url))
    assert execution["status"] == "failed"
    assert execution["error"].startswith("EgressRefused: ") and reason in execution["error"]
    assert rows[-1]["type"] == "error" and reason in rows[-1]["output"]["error"]


async def test_arguments_can_override_the_url_and_are_checked_too(api):
    task = _task("http://127.0.0.1:9/")
    task["main"] = [{"tool": "fetch", "arguments": {"url": "$ 'http://192.168.0.1/'"}}]
    execution, _ = await run_task(api, task)
    assert execution["status"] == "failed" and "192.168.0.1" in execution["error"]


async def test_redirects_drop_credentials_across_origins_and_are_checked(api):
    with LocalServer() as target:
        target_url = f"http://localhost:{target.port}/landing"

        def redirect(request: Request) -> Answer:
            return 302, {"Location": target_url if request.path == "/go" else "http://10.9.8.7/"}, b""

        with LocalServer(redirect) as redirector:
            tool = {
                "method": "GET",
                "url": redirector.url + "go",
                "follow_redirects": True,
                "headers": {"Authorization": "Bearer SECRET", "X-Trace": "1"},
            }
            task = {
                "name": "r",
                "tools": [{"name": "hop", "type": "api_call", "api_call": tool}],
                "main": [{"tool": "hop", "arguments": {}}],
            }
            execution, _ = await run_task(api, task)
            assert execution["status"] == "succeeded", execution
            assert execution["output"]["content"] == "ok"
            (first,), (second,) = redirector.requests, target.requests
            assert first.headers["Authorization"] == "Bearer SECRET"
            assert "Authorization" not in second.headers and second.headers["X-Trace"] == "1"
            assert second.headers["Host"] == f"localhost:{target.port}"

            task["tools"][0]["api_call"]["url"] = redirector.url + "elsewhere"
            refused, _ = await run_task(api, task)
            assert refused["status"] == "failed" and "10.9.8.7" in refused["error"]


def _timed_task(url: str, spec_timeout: float | None = None, arguments: dict | None = None) -> dict:
    task = _task(url)
    if spec_timeout is not None:
        task["tools"][0]["api_call"]["timeout"] = spec_timeout
    task["main"] = [{"tool": "fetch", "arguments": arguments or {}, "retry": {"max_attempts": 1}}]
    return task


async def test_a_timeout_bounds_the_whole_body_not_each_read(api):
    """A server that sends a byte every 0.1 s never lets a single read wait a second, but the call's
    1-second timeout is its deadline: the call fails and the connection is closed long before the 20 s drip
    would end."""
    with DripServer(size=200, interval=0.1) as server:
        execution, _ = await run_task(api, _timed_task(server.url, spec_timeout=1))
        assert execution["status"] == "failed", execution
        assert "did not finish within its timeout of 1 seconds" in execution["error"]
        assert await asyncio.to_thread(server.dropped.wait, 30)  # the server saw the client hang up
        assert server.sent < 100


async def test_a_timeout_bounds_every_redirect_hop_together(api):
    def slow_hop(request: Request) -> Answer:
        time.sleep(0.4)
        hop = int(request.path.strip("/") or 0)
        return (307, {"Location": f"/{hop + 1}"}, b"") if hop < 5 else (200, {}, b"done")

    with LocalServer(slow_hop) as server:
        task = _timed_task(server.url, spec_timeout=1)
        task["tools"][0]["api_call"]["follow_redirects"] = True
        execution, _ = await run_task(api, task)
    assert execution["status"] == "failed" and "timeout of 1 seconds" in execution["error"], execution
    assert len(server.requests) < 6  # six hops of 0.4 s never fit in one second


@pytest.mark.parametrize(
    "timeout, message",
    [
        ("$ 10**7", "at most 300 seconds (MINT_MAX_TOOL_TIMEOUT_SECONDS)"),
        ("$ float('inf')", "at most 300 seconds"),
        ("$ 0", "more than 0"),
        ("$ 'soon'", "timeout must be a number of seconds, not 'soon'"),
    ],
)
async def test_a_computed_timeout_outside_the_limit_fails_the_step_by_name(api, timeout, message):
    with LocalServer() as server:
        execution, _ = await run_task(api, _timed_task(server.url, arguments={"timeout": timeout}))
    assert execution["status"] == "failed" and message in execution["error"], execution
    assert "fetch" in execution["error"] and server.requests == []


async def _refused(response: httpx.Response, path: str) -> None:
    assert response.status_code == 422, response.text
    assert path in [p["loc"] for p in response.json()["error"]["details"]], response.text
    assert "MINT_MAX_TOOL_TIMEOUT_SECONDS" in response.text or "number of seconds" in response.text


@pytest.mark.parametrize(
    "change, path",
    [
        (lambda t: t["tools"][0]["api_call"].update(timeout=400), "tools[0].api_call.timeout"),
        (lambda t: t["main"][0]["arguments"].update(timeout=10**7), "main[0].arguments.timeout"),
        (lambda t: t["main"][0]["arguments"].update(timeout="soon", q="$ 1"), "main[0].arguments.timeout"),
    ],
)
async def test_a_static_timeout_outside_the_limit_is_refused_when_the_task_is_created(api, change, path):
    agent = await create_agent(api)
    task = _timed_task("http://127.0.0.1:9/")
    change(task)
    await _refused(await api.post(f"/agents/{agent['id']}/tasks", json=task), path)


async def test_an_agent_tool_with_a_timeout_over_the_limit_is_refused(api):
    agent = await create_agent(api)
    tool = {"name": "slow", "type": "api_call", "api_call": {"url": "http://127.0.0.1:9/", "timeout": 301}}
    await _refused(await api.post(f"/agents/{agent['id']}/tools", json=tool), "api_call.timeout")
    tool["api_call"]["timeout"] = 300
    created = await api.post(f"/agents/{agent['id']}/tools", json=tool)
    assert created.status_code == 201, created.text
    patched = await api.patch(
        f"/agents/{agent['id']}/tools/{created.json()['id']}", json={"api_call": {"timeout": 1e9}}
    )
    await _refused(patched, "api_call.timeout")


async def test_the_attempts_timeout_follows_the_calls_deadline(api, temporal_env):
    with LocalServer() as server:
        task = _timed_task(server.url, spec_timeout=3)
        task["main"][0]["local"] = False  # queued, so that the attempt's timeout is in the history
        execution, _ = await run_task(api, task)
    assert execution["status"] == "succeeded", execution
    history = await temporal_env.client.get_workflow_handle(execution["id"]).fetch_history()
    (scheduled,) = [
        e.activity_task_scheduled_event_attributes
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
        and e.activity_task_scheduled_event_attributes.activity_type.name == "call_api"
    ]
    # The attempt outlives the 3 s deadline by a little slack (so the call's own error wins) and the wait for
    # a place of its developer's in the worker (activities/tenant_limits.py), no more.
    assert 3 < scheduled.start_to_close_timeout.ToSeconds() <= 3 + DEADLINE_SLACK_SECONDS + PLACE_WAIT_SECONDS


async def test_credential_headers_do_not_follow_a_redirect_to_another_origin(api):
    credentials = {
        "Authorization": "Bearer a",
        "Proxy-Authorization": "Basic b",
        "Cookie": "c=d",
        "X-Api-Key": "e",
        "Api-Key": "f",
        "X-Auth-Token": "g",
        "X-Custom-Token": "h",
        "X-Client-Secret": "i",
    }
    with LocalServer() as target:
        landing = f"http://localhost:{target.port}/landing"
        with LocalServer(lambda _: (307, {"Location": landing}, b"")) as redirector:
            task = _task(redirector.url)
            task["tools"][0]["api_call"].update(
                follow_redirects=True, headers={**credentials, "X-Trace": "1"}
            )
            execution, _ = await run_task(api, task)
            assert execution["status"] == "succeeded", execution
            (first,), (second,) = redirector.requests, target.requests
    assert all(first.headers[name] == value for name, value in credentials.items())
    lowered = {name.lower() for name in second.headers}
    assert not lowered & {name.lower() for name in credentials}, second.headers
    assert second.headers["X-Trace"] == "1" and second.headers["Idempotency-Key"]


def _system_task(call: str, arguments: dict) -> dict:
    return {
        "name": "system",
        "tools": [{"name": "op", "type": "system", "system": {"call": call}}],
        "main": [{"tool": "op", "arguments": {k: f"$ {v!r}" for k, v in arguments.items()}}],
    }


TRAVERSALS = ["../secrets", "..%2Fsecrets", "..%2fsecrets", "%2e%2e/secrets", "../../secrets", "a/b"]


@pytest.mark.parametrize("bad_id", TRAVERSALS)
async def test_a_system_tool_id_cannot_reach_another_route(api, bad_id):
    """`agent.create_or_update` is POST /agents/{id}; with id `../secrets` it once became POST /secrets."""
    task = _system_task("agent.create_or_update", {"id": bad_id, "name": "PLANTED", "value": "x"})
    execution, rows = await run_task(api, task)
    assert execution["status"] == "failed"
    assert "must be a UUID" in execution["error"] and rows[-1]["type"] == "error"
    assert (await api.get("/secrets")).json() == []


async def test_a_system_tool_cannot_delete_a_secret_through_a_traversing_id(api):
    created = await api.post("/secrets", json={"name": "KEEP_ME", "value": "v"})
    secret_id = created.json()["id"]
    for bad_id in (f"../secrets/{secret_id}", f"{secret_id}/../../secrets/{secret_id}"):
        execution, _ = await run_task(api, _system_task("agent.delete", {"id": bad_id}))
        assert execution["status"] == "failed" and "must be a UUID" in execution["error"]
    assert (await api.get(f"/secrets/{secret_id}")).status_code == 200


async def test_a_system_tool_still_takes_a_real_id(api):
    agent = (await api.post("/agents", json={"name": "before"})).json()
    execution, _ = await run_task(api, _system_task("agent.patch", {"id": agent["id"], "name": "after"}))
    assert execution["status"] == "succeeded", execution["error"]
    assert (await api.get(f"/agents/{agent['id']}")).json()["name"] == "after"


async def test_an_answer_nested_too_deeply_to_read_fails_the_step_once(api):
    deep = b"[" * 5_000 + b"]" * 5_000
    with LocalServer(lambda _: (200, {"Content-Type": "application/json"}, deep)) as server:
        execution, _ = await run_task(api, _task(server.url))
        assert execution["status"] == "failed"
        assert "nested too deeply" in execution["error"]
        assert len(server.requests) == 1  # not retried: no attempt could read it
