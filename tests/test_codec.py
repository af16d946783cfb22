"""The codec server (api/routes/codec.py) decodes every tenant's payloads, so only the operator may use it:
with the token as a bearer (the Temporal CLI), or a browser signed in from the Temporal UI's origin. Its URL,
which the UI's settings show anyone, opens nothing."""

from __future__ import annotations

import base64
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio
from google.protobuf.json_format import MessageToDict

from api.operator_auth import COOKIE, session_value
from infra.settings import Settings
from infra.temporal.payload_codec import ENCRYPTED
from tests.conftest import temporal_address
from tests.helpers import run_task
from tests.stack import BackgroundStack

TOKEN = "operator-token-0123456789abcdef0123"
UI = "http://127.0.0.1:8233"
ELSEWHERE = "http://127.0.0.1:9999"


@pytest.mark.parametrize("route", ["/codec/decode", "/codec/encode", "/codec/sign-in"])
async def test_the_codec_server_is_off_without_its_token(api, route):
    assert (await api.post(route, json={"payloads": []})).status_code == 404


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def codec_stack(postgres_url, temporal_env) -> AsyncIterator[BackgroundStack]:
    async with BackgroundStack(
        postgres_url,
        temporal_address(temporal_env),
        task_queue="codec",
        codec_token=TOKEN,
        codec_origins=(UI,),
    ) as stack:
        yield stack


@pytest_asyncio.fixture(loop_scope="session")
async def sealed(codec_stack, api_key, temporal_env) -> tuple[str, dict[str, Any]]:
    """An execution's id, and its start input as the UI sends it to the codec server (protobuf JSON)."""
    async with httpx.AsyncClient(
        base_url=codec_stack.url, headers={"Authorization": f"Bearer {api_key}"}
    ) as api:
        execution, _ = await run_task(api, {"name": "t", "main": [{"evaluate": {"x": "$ 'plain-value'"}}]})
    history = await temporal_env.client.get_workflow_handle(execution["id"]).fetch_history()
    started = history.events[0].workflow_execution_started_event_attributes.input.payloads[0]
    assert started.metadata["encoding"] == ENCRYPTED and b"plain-value" not in started.data
    return execution["id"], MessageToDict(started)


@pytest_asyncio.fixture(loop_scope="session")
async def ui(codec_stack) -> AsyncIterator[httpx.AsyncClient]:
    """A caller with no credentials of its own, at the URL the UI's settings would name."""
    async with httpx.AsyncClient(base_url=f"{codec_stack.url}/codec") as client:
        yield client


def _plain(answer: httpx.Response) -> str:
    assert answer.status_code == 200, answer.text
    return base64.b64decode(answer.json()["payloads"][0]["data"]).decode()


async def _signed_in(ui: httpx.AsyncClient) -> str:
    """The session cookie's value after signing in with the token, as a browser would (a form post)."""
    signed_in = await ui.post("/sign-in", data={"token": TOKEN})
    assert signed_in.status_code == 200, signed_in.text
    cookie = signed_in.headers["set-cookie"]
    for attribute in ("HttpOnly", "SameSite=strict", "Path=/codec"):
        assert attribute.lower() in cookie.lower(), cookie
    assert TOKEN not in cookie
    return cookie.split(";")[0].removeprefix(f"{COOKIE}=")


async def test_no_credential_decodes_nothing(ui, sealed, api_key):
    _, payload = sealed
    body = {"payloads": [payload]}
    assert (await ui.post("/decode", json=body)).status_code == 401
    assert (await ui.post("/encode", json=body)).status_code == 401
    # A developer's key is not the operator's, and the token no longer works as part of the URL.
    assert (
        await ui.post("/decode", json=body, headers={"Authorization": f"Bearer {api_key}"})
    ).status_code == 401
    assert (await ui.post(f"/{TOKEN}/decode", json=body)).status_code == 404
    # From the UI's origin without a session: refused, with CORS so that the UI can say why.
    refused = await ui.post("/decode", json=body, headers={"Origin": UI})
    assert refused.status_code == 401 and refused.headers["access-control-allow-origin"] == UI


async def test_the_operator_token_decodes_as_a_bearer(ui, sealed):
    execution_id, payload = sealed
    decoded = await ui.post(
        "/decode", json={"payloads": [payload]}, headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert execution_id in _plain(decoded)


async def test_a_signed_in_browser_decodes_from_the_uis_origin_only(ui, sealed):
    execution_id, payload = sealed
    body = {"payloads": [payload]}
    wrong = await ui.post("/sign-in", data={"token": "not-the-token"})
    assert wrong.status_code == 401 and "set-cookie" not in wrong.headers
    assert "<form" in (await ui.get("/sign-in")).text
    session = {"Cookie": f"{COOKIE}={await _signed_in(ui)}"}
    decoded = await ui.post("/decode", json=body, headers={**session, "Origin": UI})
    assert execution_id in _plain(decoded)
    assert decoded.headers["access-control-allow-origin"] == UI
    assert decoded.headers["access-control-allow-credentials"] == "true"
    # The browser sends the cookie with any page's request to this host: only the UI's origin may use it.
    for headers in ({**session, "Origin": ELSEWHERE}, session):
        refused = await ui.post("/decode", json=body, headers=headers)
        assert refused.status_code == 401 and "access-control-allow-origin" not in refused.headers
    # A body a form could send without a CORS preflight is not accepted either.
    plain_text = {**session, "Origin": UI, "Content-Type": "text/plain"}
    assert (await ui.post("/decode", content=b'{"payloads": []}', headers=plain_text)).status_code == 415


async def test_an_expired_or_forged_session_is_refused(ui, sealed):
    _, payload = sealed
    for value in (session_value(TOKEN, int(time.time()) - 1), session_value("another-token", 2**40), "1.2"):
        headers = {"Cookie": f"{COOKIE}={value}", "Origin": UI}
        assert (await ui.post("/decode", json={"payloads": [payload]}, headers=headers)).status_code == 401


async def test_cors_names_the_uis_origin_with_credentials_never_a_wildcard(ui):
    asked = {
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type,x-namespace",
    }
    preflight = await ui.options("/decode", headers={**asked, "Origin": UI})
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == UI
    assert preflight.headers["access-control-allow-credentials"] == "true"
    allowed = {h.strip().lower() for h in preflight.headers["access-control-allow-headers"].split(",")}
    assert {"content-type", "x-namespace", "authorization"} <= allowed
    assert "origin" in preflight.headers["vary"].lower()
    other = await ui.options("/decode", headers={**asked, "Origin": ELSEWHERE})
    assert other.status_code == 403 and "access-control-allow-origin" not in other.headers


async def test_encode_seals_for_the_operator(ui):
    plain = {
        "metadata": {"encoding": base64.b64encode(b"json/plain").decode()},
        "data": base64.b64encode(b"1").decode(),
    }
    sealed = await ui.post(
        "/encode", json={"payloads": [plain]}, headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert sealed.status_code == 200, sealed.text
    (payload,) = sealed.json()["payloads"]
    assert base64.b64decode(payload["metadata"]["encoding"]) == ENCRYPTED
    decoded = await ui.post(
        "/decode", json={"payloads": [payload]}, headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert _plain(decoded) == "1"


def test_the_codec_settings_are_checked_at_start_up(monkeypatch):
    monkeypatch.setenv("MINT_CODEC_ORIGINS", "http://127.0.0.1:8233/, http://localhost:8233")
    monkeypatch.setenv("MINT_CODEC_TOKEN", TOKEN)
    settings = Settings.from_env()
    assert settings.codec_origins == ("http://127.0.0.1:8233", "http://localhost:8233")
    assert settings.codec_token == TOKEN
    monkeypatch.setenv("MINT_CODEC_TOKEN", "short")
    with pytest.raises(ValueError, match="MINT_CODEC_TOKEN must be at least"):
        Settings.from_env()
