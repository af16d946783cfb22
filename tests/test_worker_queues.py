"""Separate task queues (MINT_MODEL_QUEUE, `mint worker --queues`): an execution with a prompt and an
api_call needs both a worker on the model queue and one on the rest, as real `mint worker` processes."""

from __future__ import annotations

import asyncio
import uuid

import httpx
from temporalio.api.enums.v1 import PendingActivityState

from contracts.temporal import CALL_MODEL
from tests.conftest import OPENAI_KEY, temporal_address
from tests.helpers import create_agent, create_task, start, wait_for_status
from tests.local_http import LocalServer
from tests.stack import BackgroundStack, spawn_worker, stop_process


async def _pending_model_call(temporal_env, execution_id: str):
    """The execution's pending call_model activity, once it has one."""
    handle = temporal_env.client.get_workflow_handle(execution_id)
    for _ in range(1200):
        described = await handle.describe()
        pending = [
            a for a in described.raw_description.pending_activities if a.activity_type.name == CALL_MODEL
        ]
        if pending:
            return pending[0]
        await asyncio.sleep(0.05)
    raise AssertionError("the prompt's model call was never scheduled")


async def test_model_calls_run_only_on_the_model_queues_workers(
    postgres_url, temporal_env, api_key, model_server, tmp_path
):
    queue = f"split-{uuid.uuid4()}"
    model_queue = f"{queue}-models"
    address = temporal_address(temporal_env)
    api_stack = BackgroundStack(
        postgres_url, address, task_queue=queue, model_queue=model_queue, run_worker=False
    )
    workers = []
    model_server.calls.clear()
    with LocalServer() as tool_server:
        async with api_stack:
            try:
                headers = {"Authorization": f"Bearer {api_key}"}
                async with httpx.AsyncClient(base_url=api_stack.url, headers=headers, timeout=30) as api:
                    tool = {"name": "ping", "type": "api_call", "api_call": {"url": tool_server.url}}
                    main = [{"prompt": "Hi", "unwrap": True}, {"tool": "ping", "arguments": {}}]
                    agent = await create_agent(api)
                    task = await create_task(
                        api, agent["id"], {"name": "split", "tools": [tool], "main": main}
                    )
                    execution = await start(api, task["id"])
                    # The workflows' worker: no model provider at all, so a model call it made would fail.
                    workers.append(
                        spawn_worker(
                            postgres_url,
                            address,
                            queue,
                            "--queues",
                            "workflows,http,writes",
                            log=tmp_path / "rest.log",
                            MINT_MODEL_QUEUE=model_queue,
                            OPENAI_API_KEY="",
                            OPENAI_BASE_URL="",
                        )
                    )
                    pending = await _pending_model_call(temporal_env, execution["id"])
                    # Scheduled on the model queue, where no worker polls yet: not started, not attempted.
                    assert pending.state == PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED
                    assert model_server.calls == [] and tool_server.requests == []
                    workers.append(
                        spawn_worker(
                            postgres_url,
                            address,
                            queue,
                            "--queues",
                            "models",
                            "--max-model-calls",
                            "4",
                            log=tmp_path / "models.log",
                            MINT_MODEL_QUEUE=model_queue,
                            OPENAI_API_KEY=OPENAI_KEY,
                            OPENAI_BASE_URL=model_server.openai_base_url,
                        )
                    )
                    done = await wait_for_status(api, execution["id"], timeout=90)
                    logs = "".join(p.read_text() for p in tmp_path.glob("*.log"))
                    assert done["status"] == "succeeded", (done, logs)
                    assert len(model_server.calls) == 1 and len(tool_server.requests) == 1
            finally:
                for worker in workers:
                    stop_process(worker)
