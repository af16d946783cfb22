"""Completion webhooks against the real stack: an execution with a callback_url (its own, or its task's)
POSTs each reportable status, signed with the developer's webhook_secret; a receiver's 500 and a worker killed
mid-delivery are redelivered with the same Mint-Delivery-Id; a refused address fails the delivery at once."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.client import WorkflowFailureError

from tests.helpers import api_client, create_agent, create_task, wait_for_status
from tests.local_http import Answer, LocalServer, Request, ok
from tests.test_crash import Crashable

EXAMPLES = Path(__file__).parent.parent / "examples"

RETURNS = {"name": "returns", "main": [{"return": {"greeting": "$ 'hello ' + _.name"}}]}
FAILS = {"name": "fails", "main": [{"error": "$ 'no ' + _.name"}]}
ASKS = {
    "name": "asks",
    "main": [{"label": "approve", "wait_for_input": {"info": {"question": "Ship it?"}}}, {"return": "$ _"}],
}


def verified(request: Request, secret: str) -> dict[str, Any]:
    """The webhook's body, once its Mint-Signature checks out with `secret` (as a receiver checks it)."""
    parts = dict(part.split("=", 1) for part in request.headers["Mint-Signature"].split(","))
    signed = f"{parts['t']}.".encode() + request.body
    expected = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(parts["v1"], expected), "the signature does not verify"
    assert abs(time.time() - int(parts["t"])) < 300
    return dict(json.loads(request.body))


async def received(server: LocalServer, count: int, timeout: float = 60) -> list[Request]:
    for _ in range(int(timeout / 0.05)):
        if len(server.requests) >= count:
            return list(server.requests)
        await asyncio.sleep(0.05)
    raise AssertionError(f"{len(server.requests)} webhooks received, expected {count}")


async def secret_of(api: httpx.AsyncClient) -> str:
    settings = await api.get("/developer/settings")
    assert settings.status_code == 200, settings.text
    return str(settings.json()["webhook_secret"])


async def start_with(api: httpx.AsyncClient, task_id: str, url: str | None, input_: Any) -> dict[str, Any]:
    body = {"input": input_, **({"callback_url": url} if url else {})}
    response = await api.post(f"/tasks/{task_id}/executions", json=body)
    assert response.status_code == 201, response.text
    return dict(response.json())


async def _task(api: httpx.AsyncClient, spec: dict[str, Any]) -> dict[str, Any]:
    return await create_task(api, (await create_agent(api))["id"], spec)


async def test_a_succeeded_execution_posts_a_signed_webhook(api, temporal_env):
    receiver = LocalServer()
    task = await _task(api, RETURNS)
    execution = await start_with(api, task["id"], receiver.url + "hook", {"name": "ada"})
    done = await wait_for_status(api, execution["id"])
    (request,) = await received(receiver, 1)
    assert (request.method, request.path) == ("POST", "/hook")
    assert request.headers["Content-Type"] == "application/json"
    body = verified(request, await secret_of(api))
    assert body == {
        "execution_id": execution["id"],
        "task_id": task["id"],
        "status": "succeeded",
        "output": {"greeting": "hello ada"},
    }
    run = (await temporal_env.client.get_workflow_handle(execution["id"]).describe()).run_id
    delivery = f"webhook-{execution['id']}-{done['transition_count']}-{run[:8]}"
    assert request.headers["Mint-Delivery-Id"] == delivery
    await asyncio.sleep(1)
    assert len(receiver.requests) == 1  # one status, one delivery


async def test_failed_awaiting_input_and_cancelled_are_reported(api):
    receiver = LocalServer()
    failing = await _task(api, FAILS)
    failed = await start_with(api, failing["id"], receiver.url, {"name": "luck"})
    (request,) = await received(receiver, 1)
    secret = await secret_of(api)
    error = (await wait_for_status(api, failed["id"]))["error"]
    assert error.endswith("no luck")
    assert verified(request, secret) == {
        "execution_id": failed["id"],
        "task_id": failing["id"],
        "status": "failed",
        "error": error,  # as GET /executions/{id} says it
    }

    asking = await _task(api, ASKS)
    waiting = await start_with(api, asking["id"], receiver.url, {})
    _, opened = await received(receiver, 2)
    wait = next(t for t in await _transitions(api, waiting["id"]) if t["type"] == "wait")
    assert verified(opened, secret) == {
        "execution_id": waiting["id"],
        "task_id": asking["id"],
        "status": "awaiting_input",
        "waits": [{"id": wait["id"], "step": "approve", "info": {"question": "Ship it?"}}],
    }
    cancel = await api.put(f"/executions/{waiting['id']}", json={"status": "cancelled", "reason": "no"})
    assert cancel.status_code == 200, cancel.text
    *_, cancelled = await received(receiver, 3)
    body = verified(cancelled, secret)
    assert (body["execution_id"], body["status"]) == (waiting["id"], "cancelled")
    ids = {r.headers["Mint-Delivery-Id"] for r in receiver.requests}
    assert len(ids) == 3  # a delivery per status


async def _transitions(api: httpx.AsyncClient, execution_id: str) -> list[dict[str, Any]]:
    response = await api.get(f"/executions/{execution_id}/transitions", params={"limit": 100})
    return list(response.json()["items"])


async def test_a_task_callback_url_is_its_executions_default(api):
    receiver, own = LocalServer(), LocalServer()
    task = await _task(api, {**RETURNS, "callback_url": receiver.url + "task"})
    assert (await api.get(f"/tasks/{task['id']}")).json().get("callback_url", receiver.url + "task")
    first = await start_with(api, task["id"], None, {"name": "bo"})
    (request,) = await received(receiver, 1)
    assert request.path == "/task" and verified(request, await secret_of(api))["execution_id"] == first["id"]
    second = await start_with(api, task["id"], own.url + "own", {"name": "cy"})
    (mine,) = await received(own, 1)
    assert json.loads(mine.body)["execution_id"] == second["id"]
    await asyncio.sleep(1)
    assert len(receiver.requests) == 1  # the execution's own callback_url replaced the task's


async def test_a_restart_reports_to_the_executions_own_callback_url(api):
    """The create body's callback_url is kept with the execution: its restart reports there too."""
    receiver = LocalServer()
    task = await _task(api, {"name": "two", "main": [{"evaluate": {"x": "$ 1"}}, {"return": {"x": "$ _.x"}}]})
    first = await start_with(api, task["id"], receiver.url + "own", {})
    await received(receiver, 1)
    steps = [t for t in await _transitions(api, first["id"]) if t["type"] == "step"]
    from_transition = steps[0]["id"]
    restarted = await api.post(
        f"/executions/{first['id']}/restart", json={"from_transition": from_transition}
    )
    assert restarted.status_code == 201, restarted.text
    _, again = await received(receiver, 2)
    assert again.path == "/own" and json.loads(again.body)["execution_id"] == restarted.json()["id"]


async def test_a_500_is_redelivered_with_the_same_delivery_id(api):
    answers = iter([500])
    receiver = LocalServer(lambda request: (next(answers, 200), {}, b""))
    task = await _task(api, RETURNS)
    execution = await start_with(api, task["id"], receiver.url, {"name": "di"})
    first, again = await received(receiver, 2, timeout=30)
    assert first.headers["Mint-Delivery-Id"] == again.headers["Mint-Delivery-Id"]
    assert first.body == again.body and json.loads(again.body)["execution_id"] == execution["id"]
    verified(again, await secret_of(api))
    await asyncio.sleep(2)
    assert len(receiver.requests) == 2  # a 2xx ends the delivery


async def test_a_bad_callback_url_is_a_422_naming_the_field(api):
    task = await _task(api, RETURNS)
    for url in ["ftp://example.com/", "not a url", "http://", "https://example.com/" + "x" * 3000]:
        response = await api.post(f"/tasks/{task['id']}/executions", json={"input": {}, "callback_url": url})
        assert response.status_code == 422, response.text
        assert "callback_url" in response.text
    agent = await create_agent(api)
    refused = await api.post(f"/agents/{agent['id']}/tasks", json={**RETURNS, "callback_url": "file:///x"})
    assert refused.status_code == 422 and "callback_url" in refused.text


async def test_an_address_the_egress_rules_refuse_fails_the_delivery_at_once(api, temporal_env):
    task = await _task(api, RETURNS)
    execution = await start_with(api, task["id"], "http://10.1.2.3/hook", {"name": "ed"})
    done = await wait_for_status(api, execution["id"])
    assert done["status"] == "succeeded"  # the execution's own outcome does not depend on its webhook
    run = (await temporal_env.client.get_workflow_handle(execution["id"]).describe()).run_id
    delivery = f"webhook-{execution['id']}-{done['transition_count']}-{run[:8]}"
    handle = temporal_env.client.get_workflow_handle(delivery)
    with pytest.raises(WorkflowFailureError):
        await asyncio.wait_for(handle.result(), timeout=30)


async def test_the_secret_is_the_developers_own_and_rotates(api, stack, store):
    secret = await secret_of(api)
    assert secret == await secret_of(api) and len(secret) > 32
    _, other_key = await store.create_developer("other webhooks")
    async with api_client(stack.url, other_key) as other:
        theirs = await secret_of(other)
        assert theirs != secret and secret not in (await other.get("/developer/settings")).text
        rotated = await other.post("/developer/webhook-secret/rotate")
        assert rotated.status_code == 200, rotated.text
        new = rotated.json()["webhook_secret"]
        assert new != theirs and await secret_of(other) == new
    assert await secret_of(api) == secret  # another developer's rotation changes nothing of this one's

    receiver = LocalServer()
    task = await _task(api, RETURNS)
    await start_with(api, task["id"], receiver.url, {"name": "fi"})
    (request,) = await received(receiver, 1)
    verified(request, secret)
    with pytest.raises(AssertionError):
        verified(request, new)


async def test_a_delivery_survives_the_worker_killed_mid_delivery(postgres_url, temporal_env, api_key):
    first_in_flight, release = threading.Event(), threading.Event()

    def respond(request: Request) -> Answer:
        if not first_in_flight.is_set():
            first_in_flight.set()
            release.wait(30)  # held until the worker that sent it is dead
            return 500, {}, b""
        return ok(request)

    receiver = LocalServer(respond)
    crash = Crashable(postgres_url, temporal_env, api_key)
    async with crash.running() as api:
        task = await _task(api, RETURNS)
        execution = await start_with(api, task["id"], receiver.url, {"name": "gu"})
        assert await asyncio.to_thread(first_in_flight.wait, 60)
        crash.kill_worker()
        release.set()
        crash.spawn_worker()
        first, again = await received(receiver, 2, timeout=60)
        assert first.headers["Mint-Delivery-Id"] == again.headers["Mint-Delivery-Id"]
        body = json.loads(again.body)
        assert (body["execution_id"], body["status"]) == (execution["id"], "succeeded")


async def test_the_webhook_example_runs(api):
    import importlib.util

    spec = importlib.util.spec_from_file_location("webhook_example", EXAMPLES / "webhook.py")
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    waiting, done = await example.main(api)
    assert (waiting["status"], waiting["verified"]) == ("awaiting_input", True)
    assert waiting["waits"][0]["info"] == {"question": "Approve 120 EUR?"}
    assert (done["status"], done["output"], done["verified"]) == ("succeeded", {"approved": True}, True)
    assert not example.verify("wrong secret", "t=1,v1=00", b"{}")
