"""Hostile input against the new surfaces (live tokens, schedules, webhooks, the MCP server, typed waits),
as a tenant of a shared deployment would send it. Each case either found a hole (fixed beside it) or
guards one that is closed."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import httpx
import pytest
from temporalio.exceptions import ApplicationError

from activities.egress import EgressPolicy
from activities.webhooks import WebhookActivities
from contracts.webhooks import WebhookDelivery
from tests.helpers import create_agent, create_task, start, wait_for_status
from workflows.input_schema import input_problems

TASK = {"name": "hostile", "main": [{"evaluate": {"x": "$ 1"}}]}


@pytest.fixture
def listener() -> Iterator[tuple[str, list[str]]]:
    """A local HTTP server that records every path asked of it: it must never be asked anything."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}", hits
    server.shutdown()
    server.server_close()


def test_validating_an_input_never_fetches_a_remote_dynamic_ref(listener):
    # $dynamicRef to a URL made jsonschema fetch it (SSRF from the API process); now it fails closed.
    base, hits = listener
    schema = {"type": "object", "properties": {"a": {"$dynamicRef": f"{base}/dyn"}}}
    problems = input_problems(schema, {"a": {}})
    assert hits == []
    assert problems and problems[0].path == "input_schema"


def test_validating_an_input_never_fetches_through_a_nested_id(listener):
    base, hits = listener
    schema = {"type": "object", "properties": {"a": {"$id": f"{base}/x/", "$ref": "other.json"}}}
    assert input_problems(schema, {"a": {}})
    assert hits == []


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"$dynamicRef": "http://169.254.169.254/latest"}}},
        {"type": "object", "properties": {"a": {"$ref": "http://169.254.169.254/latest"}}},
    ],
)
async def test_a_remote_ref_in_a_task_schema_is_a_422(api, schema):
    agent = await create_agent(api)
    response = await api.post(f"/agents/{agent['id']}/tasks", json={**TASK, "input_schema": schema})
    assert response.status_code == 422, response.text
    assert "input_schema" in response.text


async def test_a_remote_ref_in_a_wait_schema_is_a_422(api):
    agent = await create_agent(api)
    wait = {"wait_for_input": {"info": {"q": "$ 'ok?'"}, "schema": {"$dynamicRef": "http://10.0.0.1/"}}}
    response = await api.post(f"/agents/{agent['id']}/tasks", json={"name": "w", "main": [wait]})
    assert response.status_code == 422, response.text


async def test_a_deeply_nested_wait_schema_is_refused_quickly(api):
    agent = await create_agent(api)
    depth = 3000
    schema = '{"type":"object","properties":{"a":' * depth + "{}" + "}}" * depth
    wait = '{"wait_for_input":{"info":{"q":"$ \'ok?\'"},"schema":' + schema + "}}"
    body = '{"name":"deep","main":[' + wait + "]}"
    response = await api.post(
        f"/agents/{agent['id']}/tasks", content=body, headers={"Content-Type": "application/json"}
    )
    assert 400 <= response.status_code < 500, response.text[:300]


@pytest.mark.parametrize(
    "spec",
    [
        {"every": "1ns"},
        {"every": "0s"},
        {"every": "0.5s"},
        {"every": "500ms"},
        {"every": "99999999999d"},
        {"every": "1" + "0" * 400},
        {"every": "1s" * 100},
        {"every": 10**400},
        {"cron": "* * * * * *"},
        {"cron": "0 9 * * *", "timezone": "../../etc/passwd"},
        {"every": "1h", "catchup_window": "99999999999d"},
    ],
)
async def test_a_hostile_schedule_spec_is_a_422(api, spec):
    agent = await create_agent(api)
    task = await create_task(api, agent["id"], TASK)
    response = await api.post(f"/tasks/{task['id']}/schedules", json=spec)
    assert response.status_code == 422, response.text
    assert "items" not in response.text  # a string's limit is said in characters
    assert (await api.get(f"/tasks/{task['id']}/schedules")).json()["items"] == []


@pytest.mark.parametrize("url", ["file:///etc/passwd", "http://example.com/\r\nX-Injected: 1"])
async def test_an_odd_callback_url_is_refused_at_the_edge(api, url):
    agent = await create_agent(api)
    task = await create_task(api, agent["id"], TASK)
    response = await api.post(f"/tasks/{task['id']}/executions", json={"input": {}, "callback_url": url})
    assert response.status_code == 422, response.text
    assert "callback_url" in response.text


class _Secrets:
    async def get(self, developer_id: str) -> str:
        return "whsec_never_seen"


@pytest.mark.parametrize(
    "url",
    ["http://169.254.169.254/latest", "http://[::ffff:10.0.0.1]/", "http://127.0.0.1/", "http://0x7f.1/"],
)
async def test_a_delivery_to_a_private_address_fails_for_good_and_names_no_secret(url):
    # The test stack allows loopback (its fakes live there), so this uses the default rules.
    async with httpx.AsyncClient() as http:
        webhooks = WebhookActivities(http, EgressPolicy(), _Secrets())
        with pytest.raises(ApplicationError) as refused:
            await webhooks.deliver_webhook(WebhookDelivery("d1", "dev", url, {"a": 1}))
    assert refused.value.non_retryable and "whsec" not in str(refused.value)


async def test_a_delivery_does_not_follow_a_redirect_to_a_private_address(listener):
    base, hits = listener
    redirect = httpx.MockTransport(lambda r: httpx.Response(302, headers={"Location": f"{base}/meta"}))
    async with httpx.AsyncClient(transport=redirect) as http:
        webhooks = WebhookActivities(http, EgressPolicy(("203.0.113.9",)), _Secrets())
        with pytest.raises(ApplicationError) as failed:
            await webhooks.deliver_webhook(WebhookDelivery("d2", "dev", "http://203.0.113.9/h", {}))
    assert "302" in str(failed.value) and hits == []


@pytest.mark.parametrize(
    ("body", "headers"),
    [
        ([], {}),
        ([{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}] * 50, {}),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"Accept": "text/plain"}),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x" * 10000}}, {}),
        ("not json at all", {}),
    ],
)
async def test_odd_mcp_requests_get_an_answer_not_a_crash(api, body, headers):
    accept = {"Accept": "application/json, text/event-stream", **headers}
    if isinstance(body, str):
        response = await api.post(
            "/mcp", content=body, headers={**accept, "Content-Type": "application/json"}
        )
    else:
        response = await api.post("/mcp", json=body, headers=accept)
    assert response.status_code < 500, response.text[:300]


@pytest.mark.parametrize(
    "wait_id", ["x" * 65, "../../x", "' OR 1=1 --", "00000000-0000-0000-0000-000000000000"]
)
async def test_a_hostile_wait_id_is_a_4xx(api, wait_id):
    agent = await create_agent(api)
    wait = {"wait_for_input": {"info": {"q": "$ 'ok?'"}}}
    task = await create_task(api, agent["id"], {"name": "waits", "main": [wait]})
    execution = await start(api, task["id"])
    await wait_for_status(api, execution["id"], "awaiting_input")
    body = {"status": "running", "input": {"a": 1}, "wait_id": wait_id}
    response = await api.put(f"/executions/{execution['id']}", json=body)
    assert 400 <= response.status_code < 500, response.text
