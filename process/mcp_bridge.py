"""`mint mcp`: the API's MCP server (/mcp, api/mcp_server.py) over stdio, for MCP clients that start their
servers as local programs (Claude Desktop). Each request is passed to /mcp with the API key; nothing else
is done here, so the tools, their answers and their errors are the API's."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import click

from process.api_calls import call
from process.stack_file import DATA_DIR_OPTION, URL_OPTION, api_client, find_stack

if TYPE_CHECKING:
    import mcp_types as types
    from mcp.server.context import ServerRequestContext

# A call waits for its execution up to the API's MINT_MCP_WAIT (at most an hour); connecting is quick.
CONNECT_SECONDS, READ_SECONDS = 30.0, 3700.0


async def bridge(url: str, key: str) -> None:
    """Serve MCP on stdin and stdout until stdin closes, each request answered by `url`/mcp."""
    # Imported here: the mcp package takes a second to import, which no other `mint` command should wait.
    import httpx2
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    timeout = httpx2.Timeout(CONNECT_SECONDS, read=READ_SECONDS)
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http:
        # No cache: a task added since the last listing shows at the next one.
        async with Client(
            streamable_http_client(f"{url.rstrip('/')}/mcp", http_client=http), cache=None
        ) as api:

            async def list_tools(
                _: ServerRequestContext, params: types.PaginatedRequestParams | None
            ) -> types.ListToolsResult:
                return await api.list_tools(cursor=params.cursor if params else None)

            async def call_tool(
                _: ServerRequestContext, params: types.CallToolRequestParams
            ) -> types.CallToolResult:
                return await api.call_tool(params.name, params.arguments)

            server: Server = Server("mint", on_list_tools=list_tools, on_call_tool=call_tool)
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())


@click.command("mcp")
@URL_OPTION
@DATA_DIR_OPTION
def mcp(url: str | None, data_dir: Path | None) -> None:
    """Serve your tasks as MCP tools over stdio (for Claude Desktop), through the API's /mcp."""
    stack = find_stack(data_dir, url)
    with api_client(stack) as api:  # an API that is down, or a key it refuses, said in one line, at once
        call(api, "GET", "/executions", params={"limit": 1})
    anyio.run(bridge, stack.url, stack.key)
