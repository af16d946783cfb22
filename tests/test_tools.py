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
