"""Mint's MCP server at /mcp (api/mcp_server.py), driven by the mcp package's own client over streamable HTTP:
the caller's tasks listed as tools and called, an execution that outlasts MINT_MCP_WAIT answered by its id,
a failed one as a tool error, 401 without a key, and another developer's tasks out of sight and reach."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import httpx2
import mcp_types
import pytest
import pytest_asyncio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import temporal_address
from tests.helpers import api_client, create_agent, create_task, wait_for_status
from tests.stack import BackgroundStack

WAIT = 6.0  # MINT_MCP_WAIT of the stack here: the quick tasks end well within it, the sleeping one never

DOUBLE = {
    "name": "double it",
    "description": "Doubles n.",
    "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    "main": [{"return": {"doubled": "$ _.n * 2"}}],
}
FAIL = {"name": "fail", "main": [{"error": "$ f'no luck with {_.what}'"}]}
GREET = {
    "name": "greet",
    "main": [{"return": {"value": "$ 'hello ' + _.who"}}, {"evaluate": {"x": "$ 'text'"}}],
}
SLEEP = {"name": "nap", "main": [{"sleep": {"seconds": 600}}]}
ASK = {"name": "ask", "main": [{"wait_for_input": {"info": {"question": "n?"}}}, {"return": {"n": "$ _.n"}}]}


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def mcp_stack(postgres_url, temporal_env) -> AsyncIterator[BackgroundStack]:
    queue = f"mcp-{uuid.uuid4()}"
    async with BackgroundStack(
        postgres_url, temporal_address(temporal_env), task_queue=queue, mcp_wait=WAIT
    ) as stack:
        yield stack


@pytest_asyncio.fixture(loop_scope="session")
async def mapi(mcp_stack, api_key) -> AsyncIterator[httpx.AsyncClient]:
    async with api_client(mcp_stack.url, api_key) as client:
        yield client


@asynccontextmanager
async def connected(url: str, key: str, mode: str = "auto") -> AsyncIterator[Client]:
    """The mcp package's client on /mcp with the key as a bearer token."""
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60)) as http:
        async with Client(streamable_http_client(f"{url}/mcp", http_client=http), mode=mode) as client:
            yield client


async def _tools(client: Client) -> dict[str, mcp_types.Tool]:
    return {tool.name: tool for tool in (await client.list_tools()).tools}


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_tasks_are_listed_and_called_as_tools(mcp_stack, mapi, api_key, mode):
    agent = await create_agent(mapi)
    double = await create_task(mapi, agent["id"], DOUBLE)
    await create_task(mapi, agent["id"], GREET)
    async with connected(mcp_stack.url, api_key, mode) as client:
        tools = await _tools(client)
        tool = tools["double_it"]
        assert tool.description == "Doubles n." and tool.input_schema == DOUBLE["input_schema"]
        assert tool.title == "double it"
        assert tool.meta == {"mint/task_id": double["id"]}
        assert tools["greet"].input_schema == {"type": "object"}  # no input_schema: any arguments

        result = await client.call_tool("double_it", {"n": 21})
        assert not result.is_error, result
        assert result.structured_content == {"doubled": 42}
        assert json.loads(result.content[0].text) == {"doubled": 42}

        refused = await client.call_tool("double_it", {"n": "many"})  # the task's input_schema holds
        assert refused.is_error and "input_schema" in refused.content[0].text, refused


async def test_a_failed_execution_is_a_tool_error_with_its_message(mcp_stack, mapi, api_key):
    await create_task(mapi, (await create_agent(mapi))["id"], FAIL)
    async with connected(mcp_stack.url, api_key) as client:
        result = await client.call_tool("fail", {"what": "dice"})
    assert result.is_error
    assert "no luck with dice" in result.content[0].text, result
    assert result.structured_content["status"] == "failed"


async def test_an_execution_outlasting_the_wait_answers_its_id_and_status(mcp_stack, mapi, api_key):
    await create_task(mapi, (await create_agent(mapi))["id"], SLEEP)
    async with connected(mcp_stack.url, api_key) as client:
        result = await client.call_tool("nap", {})
    assert not result.is_error, result
    found = result.structured_content
    assert found["status"] == "running" and found["execution_id"] in result.content[0].text, result
    execution = (await mapi.get(f"/executions/{found['execution_id']}")).json()
    assert execution["status"] == "running"
    cancelled = await mapi.put(f"/executions/{execution['id']}", json={"status": "cancelled"})
    assert cancelled.status_code == 200, cancelled.text
    assert (await wait_for_status(mapi, execution["id"]))["status"] == "cancelled"


async def test_names_are_mcp_safe_and_unique(mcp_stack, store, api_key):
    _, key = await store.create_developer("mcp names")
    async with api_client(mcp_stack.url, key) as own:
        agent = await create_agent(own)
        first = await create_task(own, agent["id"], {**GREET, "name": "Résumé: write one!"})
        second = await create_task(own, agent["id"], {**GREET, "name": "Résumé: write one!"})
        long = await create_task(own, agent["id"], {**GREET, "name": "x" * 200})
        odd = await create_task(own, agent["id"], {**GREET, "name": "🙂"})
        async with connected(mcp_stack.url, key) as client:
            by_task = {t.meta["mint/task_id"]: t.name for t in (await client.list_tools()).tools}
            assert by_task[first["id"]] == "Resume_write_one"
            assert by_task[second["id"]] == f"Resume_write_one_{second['id'].replace('-', '')[:8]}"
            assert by_task[long["id"]] == "x" * 64 and by_task[odd["id"]] == "task"
            result = await client.call_tool(by_task[second["id"]], {"who": "you"})
    assert result.structured_content == {"value": "hello you"}, result


async def test_another_developers_tasks_are_neither_listed_nor_called(mcp_stack, mapi, store, api_key):
    await create_task(mapi, (await create_agent(mapi))["id"], {**DOUBLE, "name": "secret plan"})
    _, other = await store.create_developer("mcp other")
    async with connected(mcp_stack.url, other) as client:
        assert "secret_plan" not in await _tools(client)
        result = await client.call_tool("secret_plan", {"n": 1})
    assert result.is_error and result.content[0].text == "Unknown tool: secret_plan"
    listed = (await mapi.get("/executions", params={"limit": 1000})).json()["items"]
    assert not [e for e in listed if e.get("task_name") == "secret plan"], "the other key started nothing"


async def test_without_a_valid_key_it_answers_401(mcp_stack):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    async with httpx.AsyncClient(base_url=mcp_stack.url) as http:
        for headers in ({}, {"Authorization": "Bearer not-a-key"}):
            response = await http.post("/mcp", json=body, headers=headers)
            assert response.status_code == 401, response.text
            assert "API key" in response.json()["error"]["message"]


async def test_hostile_calls_are_refused_clearly(mcp_stack, mapi, api_key):
    await create_task(mapi, (await create_agent(mapi))["id"], GREET)
    async with connected(mcp_stack.url, api_key) as client:
        unknown = await client.call_tool("no_such_tool", {})
        assert unknown.is_error and "Unknown tool" in unknown.content[0].text
        bad_text = await client.call_tool("greet", {"who": "a\u0000b"})
        assert bad_text.is_error and "arguments.who" in bad_text.content[0].text, bad_text
    headers = {"Authorization": f"Bearer {api_key}", "Accept": "application/json, text/event-stream"}
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "greet", "arguments": [1]}}
    async with httpx.AsyncClient(base_url=mcp_stack.url, headers=headers) as http:
        response = await http.post("/mcp", json=call, headers={"Mcp-Protocol-Version": "2025-06-18"})
        assert response.json()["error"]["code"] == mcp_types.INVALID_PARAMS, response.text
        for method in ("GET", "DELETE"):  # no stream to open, no session to end: answered at once
            assert (await http.request(method, "/mcp")).status_code == 405
        huge = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "pad": "' + b"x" * (49 * 2**20) + b'"}'
        response = await http.post("/mcp", content=huge, headers={"Content-Type": "application/json"})
        assert response.status_code == 413, response.text[:200]


async def test_an_execution_awaiting_input_is_answered_at_once_with_its_id(mcp_stack, mapi, api_key):
    await create_task(mapi, (await create_agent(mapi))["id"], ASK)
    async with connected(mcp_stack.url, api_key) as client:
        result = await client.call_tool("ask", {})
    found = result.structured_content
    assert not result.is_error and found["status"] == "awaiting_input", result
    resumed = await mapi.put(f"/executions/{found['id']}", json={"status": "running", "input": {"n": 7}})
    assert resumed.status_code == 200, resumed.text
    assert (await wait_for_status(mapi, found["id"]))["output"] == {"n": 7}


async def test_the_example_lists_and_calls_its_task(mcp_stack, api_key, tmp_path):
    script = [sys.executable, str(Path(__file__).parent.parent / "examples" / "mcp_client.py"), mcp_stack.url]
    env = {**os.environ, "MINT_API_KEY": api_key}
    done = await asyncio.to_thread(
        subprocess.run, script, cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "structuredContent: {'count': 4, 'longest': 'workflows'}" in done.stdout, done.stdout
    assert "count_words: Counts the words of a text and names the longest." in done.stdout


def _claude_desktop_config(command: str) -> dict:
    """The Claude Desktop configuration docs/mcp.md shows whose command is `command`."""
    page = (Path(__file__).parent.parent / "docs" / "mcp.md").read_text()
    blocks = [json.loads(b) for b in re.findall(r"```text\n(.*?)```", page, re.S) if "mcpServers" in b]
    return next(
        b["mcpServers"]["mint"] for b in blocks if b["mcpServers"]["mint"]["command"].endswith(command)
    )


async def test_claude_desktops_configuration_in_the_docs_serves_the_tools_over_stdio(
    mcp_stack, mapi, api_key
):
    await create_task(mapi, (await create_agent(mapi))["id"], DOUBLE)
    config = _claude_desktop_config("/mint")
    args = [mcp_stack.url if arg == "http://127.0.0.1:8080" else arg for arg in config["args"]]
    assert args != config["args"], "the docs give the API's URL as --url"
    env = {**config["env"], "MINT_API_KEY": api_key}
    command = str(Path(sys.executable).parent / "mint")  # where the docs say /path/to/mint/.venv/bin/mint
    async with Client(StdioServerParameters(command=command, args=args, env=env)) as client:
        assert "double_it" in await _tools(client)
        result = await client.call_tool("double_it", {"n": 4})
        unknown = await client.call_tool("nothing_here", {})
    assert result.structured_content == {"doubled": 8} and not result.is_error
    assert unknown.is_error and unknown.content[0].text == "Unknown tool: nothing_here"
    assert _claude_desktop_config("npx")["args"][1] == "mcp-remote"


async def test_mint_mcp_says_at_once_when_the_api_refuses_its_key(mcp_stack):
    command = [str(Path(sys.executable).parent / "mint"), "mcp", "--url", mcp_stack.url]
    env = {**os.environ, "MINT_API_KEY": "not-a-key"}
    done = await asyncio.to_thread(
        subprocess.run, command, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0 and "invalid or revoked API key" in done.stderr, done.stderr
