"""Small helpers for driving the API in tests."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import httpx
import yaml

TERMINAL = {"succeeded", "failed", "cancelled"}


def api_client(url: str, key: str, timeout: float = 30) -> httpx.AsyncClient:
    """A client of the API at `url`, as the developer whose API key is `key`."""
    return httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=timeout)


async def create_agent(api: httpx.AsyncClient, name: str = "tester") -> dict[str, Any]:
    response = await api.post("/agents", json={"name": name})
    assert response.status_code == 201, response.text
    return response.json()


async def create_task(
    api: httpx.AsyncClient, agent_id: str, task: dict[str, Any] | str, warnings: bool = False
) -> dict[str, Any]:
    """Create a task; with `warnings`, the answer lists them (`?warnings=true`; else only its Warning header)."""
    params = {"warnings": "true"} if warnings else {}
    if isinstance(task, str):
        yaml_type = {"Content-Type": "application/yaml"}
        response = await api.post(f"/agents/{agent_id}/tasks", content=task, headers=yaml_type, params=params)
    else:
        response = await api.post(f"/agents/{agent_id}/tasks", json=task, params=params)
    assert response.status_code == 201, response.text
    return response.json()


async def start(api: httpx.AsyncClient, task_id: str, input_: Any = None) -> dict[str, Any]:
    response = await api.post(
        f"/tasks/{task_id}/executions", json={"input": input_ if input_ is not None else {}}
    )
    assert response.status_code == 201, response.text
    return response.json()


async def wait_for_status(
    api: httpx.AsyncClient,
    execution_id: str,
    statuses: set[str] = TERMINAL,
    timeout: float = 60,
    every: float = 0.05,
) -> dict[str, Any]:
    """The execution once its status is one of `statuses`, polled every `every` seconds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        execution = (await api.get(f"/executions/{execution_id}")).json()
        if execution["status"] in statuses:
            return execution
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"execution stayed {execution['status']}: {execution}")
        await asyncio.sleep(every)


async def transitions(api: httpx.AsyncClient, execution_id: str) -> list[dict[str, Any]]:
    response = await api.get(
        f"/executions/{execution_id}/transitions", params={"direction": "asc", "limit": 1000}
    )
    assert response.status_code == 200, response.text
    return response.json()["items"]


async def run_task(
    api: httpx.AsyncClient, task: dict[str, Any] | str, input_: Any = None, agent_id: str | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Create a task, run it to the end, and return (execution, transitions)."""
    if agent_id is None:
        agent_id = (await create_agent(api))["id"]
    created = await create_task(api, agent_id, task)
    execution = await start(api, created["id"], input_)
    done = await wait_for_status(api, execution["id"])
    return done, await transitions(api, execution["id"])


def load(text: str) -> dict[str, Any]:
    return yaml.safe_load(text)


async def wait_indexed(api: httpx.AsyncClient, doc_id: str, timeout: float = 60) -> dict[str, Any]:
    """The doc once its indexing has ended. Creating a doc waits up to 20 s for it, which on a busy machine
    may not cover the first doc's loading of the embedding model."""
    deadline = asyncio.get_running_loop().time() + timeout
    while (doc := (await api.get(f"/docs/{doc_id}")).json())["status"] == "pending":
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"doc {doc_id} stayed pending")
        await asyncio.sleep(0.1)
    return doc


async def queued_execution(store: Any, developer_name: str) -> tuple[str, str]:
    """A new developer's `queued` execution of an empty task, written straight to the store: (developer, id)."""
    from infra.store.tables import AGENTS

    developer, _ = await store.create_developer(developer_name)
    agent = await store.insert(AGENTS, developer, {"name": "a"})
    task = await store.save_task(developer, agent.id, None, {"name": "t", "main": []}, "dollar")
    execution = await store.create_execution(developer, (task.id, 1), {}, {}, None)
    return developer, execution.id


# A command started from a background job (`cmd &` in a script, as CI runners and nohup do) inherits SIGINT
# ignored, and exec keeps it ignored: a Ctrl-C the test sends would never arrive. This prefix puts SIGINT
# back to its default before it execs the command, as a terminal's foreground job has it.
_RESET_SIGINT = "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])"


def as_foreground(command: list[str]) -> list[str]:
    """`command`, started with SIGINT at its default whatever this process inherited."""
    return [sys.executable, "-c", _RESET_SIGINT, *command]
