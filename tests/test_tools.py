"""api_call tools that must not run: refused addresses and schemes end the execution clearly, never stuck."""

import pytest

from tests.helpers import run_task


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
