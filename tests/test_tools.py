"""api_call tools that must not run: refused addresses and schemes end the execution clearly, never stuck."""

import pytest

from tests.helpers import run_task
from tests.local_http import Answer, LocalServer, Request


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
    assert reason in execution["error"] and "call_api failed" in execution["error"]
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
