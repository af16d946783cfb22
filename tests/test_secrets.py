"""Secrets: stored sealed, never shown again, filled in only inside the activity that makes the call."""

from __future__ import annotations

import base64
import html
import json
import logging
import re
from typing import Any
from urllib.parse import parse_qs, quote, quote_plus, urlsplit

import pytest
from julep import AsyncJulep
from temporalio.api.common.v1 import Payload

from activities.secrets import Redactor
from infra.store.secrets import MASK
from infra.temporal.payload_codec import ENCRYPTED, EncryptionCodec
from tests.helpers import create_agent, run_task
from tests.local_http import Answer, LocalServer, Request
from tests.stack import TEST_ENCRYPTION_KEY

CANARY = "canary-secret-5e1b7d93c2a84f06"


async def test_a_secret_is_shown_once_as_a_mask_and_sealed_at_rest(api, store):
    created = await api.post("/secrets", json={"name": "STRIPE_KEY", "value": CANARY, "description": "d"})
    assert created.status_code == 201, created.text
    secret = created.json()
    assert secret["value"] == MASK and secret["name"] == "STRIPE_KEY"
    answers = [
        created,
        await api.get("/secrets"),
        await api.get(f"/secrets/{secret['id']}"),
        await api.put(f"/secrets/{secret['id']}", json={"name": "STRIPE_KEY", "value": CANARY + "2"}),
    ]
    for answer in answers:
        assert answer.status_code in (200, 201) and CANARY not in answer.text
    assert [s["name"] for s in answers[1].json()] == ["STRIPE_KEY"]
    sealed = await store.pool.fetchval("SELECT sealed_value FROM secrets WHERE id = $1", secret["id"])
    assert CANARY.encode() not in sealed
    assert (await api.delete(f"/secrets/{secret['id']}")).status_code == 202
    assert (await api.get(f"/secrets/{secret['id']}")).status_code == 404


async def test_secret_names_are_identifiers_and_unique(api):
    bad = await api.post("/secrets", json={"name": "not a name", "value": "v"})
    assert bad.status_code == 422 and "name" in bad.text
    assert (await api.post("/secrets", json={"name": "TWICE", "value": "v"})).status_code == 201
    again = await api.post("/secrets", json={"name": "TWICE", "value": "v"})
    assert again.status_code == 409 and "TWICE" in again.json()["error"]["message"]


async def test_the_julep_sdk_manages_secrets(stack, api_key):
    # Closed here: left to the garbage collector, its close would run on whichever loop is current then.
    async with AsyncJulep(api_key=api_key, base_url=stack.url) as client:
        await _manage_secrets(client)


async def _manage_secrets(client: AsyncJulep) -> None:
    created = await client.secrets.create(name="SDK_SECRET", value=CANARY)
    assert created.value == MASK
    assert [s.name for s in await client.secrets.list()] == ["SDK_SECRET"]
    updated = await client.secrets.update(created.id, name="SDK_SECRET_2", value="other")
    assert updated.name == "SDK_SECRET_2"
    assert (await client.secrets.delete(created.id)).id == created.id


def _echo_after_one_failure() -> tuple[LocalServer, list[Request]]:
    """Fails the first request with a 500 that quotes it, then echoes each request back."""
    seen: list[Request] = []

    def respond(request: Request) -> Answer:
        seen.append(request)
        echoed = json.dumps({"path": request.path, "auth": request.headers.get("Authorization")}).encode()
        return (500 if len(seen) == 1 else 200), {"Content-Type": "application/json"}, echoed

    return LocalServer(respond), seen


def _tool_task(url: str) -> dict[str, Any]:
    return {
        "name": "uses a secret",
        "tools": [
            {
                "name": "echo",
                "type": "api_call",
                "api_call": {
                    "method": "GET",
                    "url": url + "echo?key={{ secrets.CANARY_KEY }}",
                    "headers": {"Authorization": "$ 'Bearer ' + secrets.CANARY_KEY"},
                },
            }
        ],
        # Queued (a regular activity), so that its failed attempt is in the history the test searches.
        "main": [{"tool": "echo", "arguments": {}, "retry": {"initial_interval": 0.1}, "local": False}],
    }


# Random identifiers in a history (run ids, request ids, the sticky task queue's hex name) can hold any short
# hex fragment of a canary by chance; they are cut out before the history is searched.
_RANDOM_IDS = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{12,}", re.I)


async def _plain_history_text(temporal_env, execution_id: str, marker: str = "Bearer") -> str:
    """The whole Temporal history as text, each payload decrypted and decoded, as an operator would see it
    through the codec server (the ciphertext itself left out: random bytes can spell anything)."""
    history = await temporal_env.client.get_workflow_handle(execution_id).fetch_history()
    codec = EncryptionCodec((TEST_ENCRYPTION_KEY,))
    texts: list[str] = []

    async def visit(node: Any) -> Any:
        if isinstance(node, dict):
            if set(node) >= {"metadata", "data"}:
                payload = Payload(
                    metadata={k: base64.b64decode(v) for k, v in node["metadata"].items()},
                    data=base64.b64decode(node["data"]),
                )
                if payload.metadata.get("encoding") == ENCRYPTED:
                    (payload,) = await codec.decode([payload])
                texts.append(payload.SerializeToString().decode(errors="replace"))
                return "(payload)"
            return {key: await visit(value) for key, value in node.items()}
        if isinstance(node, list):
            return [await visit(value) for value in node]
        return node

    texts.append(json.dumps(await visit(history.to_json_dict())))
    assert any(marker in t for t in texts)  # the decoding worked: the request's template is there
    return _RANDOM_IDS.sub("(id)", "\n".join(texts))


async def test_a_secret_used_by_a_failing_tool_appears_nowhere_but_the_call(api, temporal_env, caplog):
    caplog.set_level(logging.DEBUG)
    assert (await api.post("/secrets", json={"name": "CANARY_KEY", "value": CANARY})).status_code == 201
    server, seen = _echo_after_one_failure()
    try:
        execution, rows = await run_task(api, _tool_task(server.url))
    finally:
        server.close()
    assert execution["status"] == "succeeded", execution["error"]
    # The secret really went out, in the query and in the header, on both attempts.
    assert len(seen) == 2
    for request in seen:
        assert parse_qs(urlsplit(request.path).query)["key"] == [CANARY]
        assert request.headers["Authorization"] == f"Bearer {CANARY}"
    # The echo came back masked.
    assert rows[-1]["output"]["json"]["auth"] == "Bearer [secret CANARY_KEY]"
    listed = await api.get("/secrets")
    everything = [
        json.dumps(rows),
        json.dumps(execution),
        listed.text,
        await _plain_history_text(temporal_env, execution["id"]),
        "\n".join(f"{r.getMessage()} {r.args!r} {r.exc_text or ''}" for r in caplog.records),
    ]
    assert "500" in everything[3]  # the failed attempt is in the history, with its (masked) message
    for text in everything:
        assert CANARY not in text


async def test_an_agent_secret_overrides_the_developers_for_that_agents_tools(api):
    server, seen = _echo_after_one_failure()
    seen.append(Request("GET", "/", {}, b""))  # no failure this time
    try:
        await api.post("/secrets", json={"name": "CANARY_KEY", "value": "developer-value"})
        agent = await create_agent(api)
        added = await api.post(
            f"/agents/{agent['id']}/secrets", json={"name": "CANARY_KEY", "value": "agent-value"}
        )
        assert added.status_code == 201 and added.json()["value"] == MASK
        listed = (await api.get(f"/agents/{agent['id']}/secrets")).json()["items"]
        assert [s["name"] for s in listed] == ["CANARY_KEY"]
        execution, _ = await run_task(api, _tool_task(server.url), agent_id=agent["id"])
        assert execution["status"] == "succeeded", execution["error"]
        other, _ = await run_task(api, _tool_task(server.url))
        assert other["status"] == "succeeded", other["error"]
    finally:
        server.close()
    assert [r.headers["Authorization"] for r in seen[1:]] == ["Bearer agent-value", "Bearer developer-value"]


async def test_a_missing_secret_fails_the_step_by_name(api):
    server = LocalServer()
    try:
        execution, _ = await run_task(api, _tool_task(server.url))
    finally:
        server.close()
    assert execution["status"] == "failed" and "CANARY_KEY" in execution["error"]
    assert server.requests == []


async def test_text_that_looks_like_a_reference_is_not_filled_in(api):
    """A user's input cannot smuggle in a reference: each call's references carry a fresh nonce."""
    await api.post("/secrets", json={"name": "CANARY_KEY", "value": CANARY})
    server = LocalServer(lambda r: (200, {}, r.path.encode()))
    forged = "\u2063secret:anything:CANARY_KEY\u2063"
    task = {
        "name": "forge",
        "tools": [{"name": "get", "type": "api_call", "api_call": {"method": "GET", "url": server.url}}],
        "main": [{"tool": "get", "arguments": {"params": {"q": "$ _.forged"}}}],
    }
    try:
        execution, _ = await run_task(api, task, {"forged": forged})
    finally:
        server.close()
    assert execution["status"] == "succeeded", execution["error"]
    assert CANARY not in server.requests[0].path


async def test_a_secret_changed_before_use_fails_the_step_clearly(api):
    """A filter or function over `secrets.NAME` would only ever see the reference, never the value."""
    await api.post("/secrets", json={"name": "CANARY_KEY", "value": CANARY})
    server = LocalServer()
    task = _tool_task(server.url)
    task["tools"][0]["api_call"]["headers"] = {"X-Key": "{{ secrets.CANARY_KEY | upper }}"}
    try:
        execution, _ = await run_task(api, task)
    finally:
        server.close()
    assert execution["status"] == "failed" and "changes a secret" in execution["error"]
    assert server.requests == []


# Secrets in altered forms -------------------------------------------------------------------------------------

ODD = "Canary\\5e1b\"7d93'/é 😀&<"  # a backslash, both quotes, a slash, non-ASCII, astral, HTML specials


def _html(value: str) -> str:
    return html.escape(value).replace("&#x27;", "&#39;")


ALTERED = {
    "lower-cased": str.lower,
    "upper-cased": str.upper,
    "repr": repr,
    "ascii": ascii,
    "bytes repr": lambda v: repr(v.encode()),
    "json": json.dumps,
    "json, not ascii": lambda v: json.dumps(v, ensure_ascii=False),
    "json of json": lambda v: json.dumps(json.dumps(v)),
    "json, upper-cased": lambda v: json.dumps(v.upper()),
    "repr of json": lambda v: repr(json.dumps(v)),
    "quote": lambda v: quote(v, safe=""),
    "quote, lower hex": lambda v: quote(v, safe="").lower(),
    "quote keeping /": quote,
    "quote_plus": quote_plus,
    "quoted twice": lambda v: quote(quote(v, safe=""), safe=""),
    "quote, lower-cased": lambda v: quote(v.lower(), safe=""),
    "html": _html,
    "base64": lambda v: base64.b64encode(v.encode()).decode(),
    "urlsafe base64": lambda v: base64.urlsafe_b64encode(v.encode()).decode(),
}


@pytest.mark.parametrize("form", ALTERED)
def test_every_form_a_secret_can_take_is_masked(form):
    masked = Redactor({"KEY": ODD}).text(f"echo: {ALTERED[form](ODD)} (end)")
    assert "5e1b" not in masked.lower() and "[secret KEY]" in masked, masked


def test_a_host_names_idna_form_and_a_cut_short_value_are_masked():
    host = "Bücher-5e1b7d93"
    redactor = Redactor({"HOST": host, "KEY": CANARY})
    for text in (host.encode("idna").decode(), f"http://{host.lower()}.example/", CANARY[:-4]):
        assert "5e1b" not in redactor.text(f"no such host: {text}").lower(), text


def test_a_numeric_secret_is_masked_as_a_json_number_and_a_key():
    masked = Redactor({"PIN": "8675309123"}).value({"n": 8675309123, "8675309123": [8675309123.0]})
    assert "8675309" not in json.dumps(masked)


SECRET_URLS = [
    # The host is lower-cased in the resolver's error; a backslash is doubled in a quoted URL.
    ("http://{{ secrets.ODD_KEY }}.invalid/", "CanaryHost5e1b7d93", "cannot resolve"),
    ("http://127.0.0.1:99999/{{ secrets.ODD_KEY }}", ODD, "invalid port"),
    ("http://127.0.0.1:9/{{ secrets.ODD_KEY }}", ODD, "ConnectError"),
]


@pytest.mark.parametrize("url, value, reason", SECRET_URLS)
async def test_a_secret_in_a_url_stays_out_of_the_error(api, temporal_env, url, value, reason):
    assert (await api.post("/secrets", json={"name": "ODD_KEY", "value": value})).status_code == 201
    task = {
        "name": "bad url",
        "tools": [{"name": "get", "type": "api_call", "api_call": {"method": "GET", "url": url}}],
        "main": [{"tool": "get", "arguments": {}, "retry": {"max_attempts": 1}}],
    }
    execution, rows = await run_task(api, task)
    assert execution["status"] == "failed" and reason in execution["error"], execution
    history = await _plain_history_text(temporal_env, execution["id"], "secrets.ODD_KEY")
    for text in (json.dumps(execution), json.dumps(rows), history):
        assert "5e1b" not in text.lower()


def _echo_in_every_form(request: Request) -> Answer:
    """Echoes the `token` of a JSON body back in many encodings, in the body and in headers."""
    token = json.loads(request.body)["token"]
    pin = int(parse_qs(urlsplit(request.path).query)["pin"][0])
    echoed = {name: form(token) for name, form in ALTERED.items()}
    body = json.dumps({"echo": echoed, token: "as a key", "pin": pin})
    headers = {
        "Content-Type": "application/json",
        "X-Echo": quote(token, safe="").lower(),
        "Location": "/next?token=" + quote_plus(token),
    }
    return 200, headers, body.encode()


async def test_an_echo_of_a_secret_in_any_form_comes_back_masked(api):
    for name, value in (("ODD_KEY", ODD), ("PIN", "8675309123")):
        assert (await api.post("/secrets", json={"name": name, "value": value})).status_code == 201
    spec = {
        "method": "POST",
        "url": "{{ arguments.base }}echo?pin={{ secrets.PIN }}",
        "json": {"token": "{{ secrets.ODD_KEY }}"},
    }
    task = {
        "name": "echo",
        "tools": [{"name": "echo", "type": "api_call", "api_call": spec}],
        "main": [{"tool": "echo", "arguments": {"base": "$ _.base"}}],
    }
    with LocalServer(_echo_in_every_form) as server:
        execution, rows = await run_task(api, task, {"base": server.url})
    assert execution["status"] == "succeeded", execution["error"]
    assert json.loads(server.requests[0].body)["token"] == ODD  # the secret really went out
    output = execution["output"]
    assert output["json"]["pin"] == "[secret PIN]" and "[secret ODD_KEY]" in output["headers"]["x-echo"]
    for text in (json.dumps(execution), json.dumps(rows)):
        assert "5e1b" not in text.lower() and "8675309" not in text


# Secrets and redirects ------------------------------------------------------------------------------------------

WHERE_SECRETS_GO = {
    "a header": {"headers": {"X-Api-Key": "{{ secrets.CANARY_KEY }}"}},
    "the query": {"params": {"key": "{{ secrets.CANARY_KEY }}"}},
    "the URL": {"url": "{{ arguments.base }}go/{{ secrets.CANARY_KEY }}"},
    "a JSON body": {"method": "POST", "json": {"token": "{{ secrets.CANARY_KEY }}"}},
}


def _redirecting_task(where: str) -> dict[str, Any]:
    spec = {"method": "GET", "url": "{{ arguments.base }}go", "follow_redirects": True}
    return {
        "name": "redirected",
        "tools": [{"name": "hop", "type": "api_call", "api_call": {**spec, **WHERE_SECRETS_GO[where]}}],
        "main": [{"tool": "hop", "arguments": {"base": "$ _.base"}}],
    }


@pytest.mark.parametrize("where", WHERE_SECRETS_GO)
async def test_a_request_carrying_a_secret_does_not_follow_a_redirect_to_another_origin(api, where):
    await api.post("/secrets", json={"name": "CANARY_KEY", "value": CANARY})
    with LocalServer() as target:
        landing = f"http://localhost:{target.port}/landing-page"
        with LocalServer(lambda _: (307, {"Location": landing}, b"")) as redirector:
            execution, _ = await run_task(api, _redirecting_task(where), {"base": redirector.url})
            assert len(redirector.requests) == 1 and CANARY in str(redirector.requests[0])
    assert execution["status"] == "failed", execution
    error = execution["error"]
    assert "another origin" in error and f"localhost:{target.port}" in error and "landing-page" not in error
    assert target.requests == []


async def test_a_request_carrying_a_secret_follows_a_redirect_within_its_origin(api):
    await api.post("/secrets", json={"name": "CANARY_KEY", "value": CANARY})

    def redirect_once(request: Request) -> Answer:
        return (307, {"Location": "/landing"}, b"") if request.path == "/go" else (200, {}, b"landed")

    with LocalServer(redirect_once) as server:
        execution, _ = await run_task(api, _redirecting_task("a header"), {"base": server.url})
    assert execution["status"] == "succeeded", execution["error"]
    assert execution["output"]["content"] == "landed"
    assert [r.headers["X-Api-Key"] for r in server.requests] == [CANARY, CANARY]
