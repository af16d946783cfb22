"""Mint's MCP server: your tasks are tools. This creates a task over the REST API, then lists and calls it
over MCP (streamable HTTP at /mcp) with the mcp package's own client.

Run against `mint up`, from the repository (the key `mint up` printed, also in .mint/api_key):
    MINT_API_KEY=... python examples/mcp_client.py [http://127.0.0.1:8080]
It prints each tool with its input schema, then the call's answer: the task's output as text and as
structuredContent.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import httpx
import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

TASK = {
    "name": "count words",
    "description": "Counts the words of a text and names the longest.",
    "input_schema": {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "the text to count"}},
        "required": ["text"],
    },
    "main": [
        {"evaluate": {"words": "$ _.text.split()"}},
        {"return": {"count": "$ len(_.words)", "longest": "$ max(_.words, key=len)"}},
    ],
}


def api_key() -> str:
    """MINT_API_KEY, else the key `mint up` kept in .mint/api_key."""
    return os.environ.get("MINT_API_KEY") or Path(".mint/api_key").read_text().strip()


async def create_task(url: str, key: str) -> str:
    """An agent and the task above, over the REST API; the task's id."""
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {key}"}) as api:
        agent = (await api.post("/agents", json={"name": "mcp example"})).raise_for_status().json()
        return (await api.post(f"/agents/{agent['id']}/tasks", json=TASK)).raise_for_status().json()["id"]


async def main(url: str) -> None:
    key = api_key()
    task_id = await create_task(url, key)
    # The API key goes as a bearer token, as on every route; 90 s is more than MINT_MCP_WAIT's default 60.
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(90)) as http:
        async with Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
            tools = (await client.list_tools()).tools
            for tool in tools:
                print(f"{tool.name}: {tool.description} {tool.input_schema}")
            # Tool names come from task names, made unique: the tool's _meta names its task.
            name = next(t.name for t in tools if (t.meta or {}).get("mint/task_id") == task_id)
            result = await client.call_tool(name, {"text": "durable workflows for agents"})
    if result.is_error:
        sys.exit(f"the call failed: {result.content[0].text}")
    print("text:", result.content[0].text)
    print("structuredContent:", result.structured_content)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8080"))
