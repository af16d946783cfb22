"""The OpenAPI surface, fuzzed: schemathesis drives every operation of the running app's openapi.json.

Each operation gets schemathesis's coverage cases (boundary and invalid values for every parameter and body
field, wrong types, missing fields, unexpected methods) and a few random requests, positive and negative.
Every answer must be no 5xx, a documented status code and content type, and a body matching the declared
schema (errors included). Ids in paths and bodies are random and, as often, the ids of real resources seeded
for the run, so that requests get past the 404 and reach the handlers' real work (a chat gets a model).

Reproducible: Hypothesis is derandomized and keeps no example database (nothing is written to the repo).
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir
from schemathesis.checks import not_a_server_error
from schemathesis.generation.meta import TestPhase
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.helpers import create_agent, create_task, start, transitions, wait_for_status
from tests.model_server import Reply

# database=None (below) keeps no examples, but Hypothesis still caches constants and Unicode tables in its home
# directory, ./.hypothesis by default: that goes outside the repository.
set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "mint-hypothesis")

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
MAX_EXAMPLES = 10  # random requests per operation, on top of the coverage cases
REQUEST_TIMEOUT = 30  # seconds (a doc create waits up to 20 for its embeddings); a hanging answer fails

FINISHING_TASK = {"name": "finishes", "main": [{"evaluate": {"x": "$ 1"}}]}
WAITING_TASK = {"name": "waits", "main": [{"wait_for_input": {"info": {"question": "$ 'ok?'"}}}]}
TOOL = {"name": "probe", "type": "function", "description": "a function tool"}
DOC = {"title": "t", "content": "c"}
# An import of up to 1,000 docs is valid, but each doc starts an indexing workflow that the in-process worker
# then runs: a 1,000-doc import is minutes of background work on 2 cores, slowing every request after it
# (and /embed waits for the embedder it keeps busy). Imports here are cut off at this many docs.
MAX_IMPORTED_DOCS = 50
# Body fields that name resources, and the seeded ids they get.
BODY_IDS = {"agent": "agent_id", "user": "user_id"}
BODY_ID_LISTS = {"agents": "agent_id", "users": "user_id"}


def _created(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 201, response.text
    return response.json()


async def _seed(api: httpx.AsyncClient, task: dict[str, Any], status: str) -> dict[str, str]:
    """One of everything (by path parameter name), its execution run until `status`."""
    agent = await create_agent(api, "fuzzed")
    tool = _created(await api.post(f"/agents/{agent['id']}/tools", json=TOOL))
    user = _created(await api.post("/users", json={"name": "ada"}))
    created = await create_task(api, agent["id"], task)
    execution = await start(api, created["id"])
    await wait_for_status(api, execution["id"], {status})
    transition = (await transitions(api, execution["id"]))[-1]
    doc = _created(await api.post(f"/agents/{agent['id']}/docs", json=DOC))
    session = _created(await api.post("/sessions", json={"agent": agent["id"], "user": user["id"]}))
    return {
        "agent_id": agent["id"],
        "tool_id": tool["id"],
        "user_id": user["id"],
        "task_id": created["id"],
        "execution_id": execution["id"],
        "transition_id": transition["id"],
        "doc_id": doc["id"],
        "session_id": session["id"],
    }


@dataclass
class World:
    url: str
    key: str
    # For every operation but those that destroy: its execution has ended, so its SSE streams end too.
    kept: dict[str, str]
    # For DELETE and PUT /executions/{id} (resume or cancel): its execution waits for input.
    doomed: dict[str, str]

    def ids_for(self, operation: Any) -> dict[str, str]:
        method = operation.method.upper()
        destroys = method == "DELETE" or (method == "PUT" and operation.path == "/executions/{execution_id}")
        return self.doomed if destroys else self.kept


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def world(model_stack, store, script) -> AsyncIterator[World]:
    # The default echo script reads the last message's text, which a valid chat need not have (an assistant
    # message with only tool calls): here the model always answers.
    script.reply = lambda call: Reply(content="ok")
    _, key = await store.create_developer("fuzz")
    async with httpx.AsyncClient(
        base_url=model_stack.url, headers={"Authorization": f"Bearer {key}"}, timeout=30
    ) as api:
        kept = await _seed(api, FINISHING_TASK, "succeeded")
        doomed = await _seed(api, WAITING_TASK, "awaiting_input")
    yield World(model_stack.url, key, kept, doomed)
    script.reset()


def _path_variants(ids: dict[str, str], path_parameters: dict[str, Any]) -> list[dict[str, Any]]:
    """The path parameters with real ids put in (for /{owners}/{owner_id}/..., once per kind of owner)."""
    known = {name: ids[name] for name in path_parameters if name in ids}
    if "owner_id" in path_parameters:
        return [
            {**path_parameters, **known, "owners": "agents", "owner_id": ids["agent_id"]},
            {**path_parameters, **known, "owners": "users", "owner_id": ids["user_id"]},
        ]
    return [{**path_parameters, **known}] if known else []


def _body_with_ids(ids: dict[str, str], body: dict[str, Any], keep: str | None = None) -> dict[str, Any]:
    """The body with real ids in its id fields (but `keep`, the field a coverage case is about)."""
    replaced = {k: ids[v] for k, v in BODY_IDS.items() if k in body and k != keep}
    replaced |= {k: [ids[v]] for k, v in BODY_ID_LISTS.items() if k in body and k != keep}
    return {**body, **replaced}


@pytest.fixture(scope="module")
def fuzz_schema(world: World) -> Any:
    schema = schemathesis.openapi.from_url(f"{world.url}/openapi.json")
    schema.config.update(base_url=world.url, headers={"Authorization": f"Bearer {world.key}"})

    # Random requests: each draws either its generated ids or real ones.
    def flatmap_path_parameters(ctx: Any, path_parameters: Any) -> Any:
        if not isinstance(path_parameters, dict):
            return st.just(path_parameters)
        variants = _path_variants(world.ids_for(ctx.operation), path_parameters)
        return st.sampled_from([path_parameters, *variants])

    def flatmap_body(ctx: Any, body: Any) -> Any:
        if not isinstance(body, dict):
            return st.just(body)
        with_ids = _body_with_ids(world.ids_for(ctx.operation), body)
        return st.sampled_from([body, with_ids]) if with_ids != body else st.just(body)

    # Coverage cases (fixed, not drawn): real ids everywhere except in the part a case is about, so that a
    # case about a body field reaches the handler instead of stopping at "agent 0 not found".
    def map_case(ctx: Any, case: Any) -> Any:
        if case.meta is None or case.meta.phase.name != TestPhase.COVERAGE:
            return case
        about = case.meta.phase.data
        ids = world.ids_for(case.operation)
        location = about.parameter_location.value if about.parameter_location else None
        if location != "path" and isinstance(case.path_parameters, dict):
            variants = _path_variants(ids, case.path_parameters)
            if variants:
                case.path_parameters = variants[0]
        if isinstance(case.body, dict):
            case.body = _body_with_ids(ids, case.body, keep=about.parameter if location == "body" else None)
        return case

    def filter_case(ctx: Any, case: Any) -> bool:
        if not case.operation.path.endswith("/docs/import") or not isinstance(case.body, dict):
            return True
        docs = case.body.get("docs")
        return not isinstance(docs, list) or len(docs) <= MAX_IMPORTED_DOCS

    for hook in (flatmap_path_parameters, flatmap_body, map_case, filter_case):
        schema.hook(hook)
    return schema


@pytest.fixture(autouse=True)
def _schemathesis_node_id(request: pytest.FixtureRequest) -> None:
    # schemathesis 4.32's `from_fixture` reads `node._nodeid`, which pytest 9.2 no longer has (it keeps the id
    # elsewhere): without this every lazily loaded schema test fails with AttributeError before it starts.
    if not hasattr(request.node, "_nodeid"):
        request.node._nodeid = request.node.nodeid


schema = schemathesis.pytest.from_fixture("fuzz_schema")


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    # Generation is slow for the big bodies (tasks, tools); filtering is expected for negative cases.
    suppress_health_check=list(HealthCheck),
)
def test_api(case: Any) -> None:
    case.call_and_validate(checks=CHECKS, timeout=REQUEST_TIMEOUT)
