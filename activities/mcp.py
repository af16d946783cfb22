"""Integration tools served by MCP servers (Model Context Protocol), through the `mcp` package.

A task names a server in its tool's `integration.setup`: `server` is a stdio server the operator configured
(`MINT_MCP_SERVERS`; a task can never choose a command to run on the worker), or `url` is a Streamable HTTP
server, which passes the same egress check as api_call tools. Each call opens a session, calls one tool and
closes it: nothing outlives the activity, so a retried call starts clean.
"""

from __future__ import annotations

import json
from typing import Any

import mcp
from temporalio import activity

from activities import errors
from activities.egress import EgressPolicy, EgressRefused
from activities.heartbeat import heartbeating
from workflows.calls import CALL_MCP
from workflows.interpreter import LIST_MCP_TOOLS

CALL_TIMEOUT_SECONDS = 120.0


class McpActivities:
    def __init__(self, servers: dict[str, dict[str, Any]], egress: EgressPolicy):
        self.servers = servers  # name -> {"command": ..., "args": [...], "env": {...}}
        self.egress = egress

    @activity.defn(name=LIST_MCP_TOOLS)
    async def list_mcp_tools(self, integration: dict[str, Any]) -> list[dict[str, Any]]:
        """The server's tools as {name, description, parameters}."""
        async with heartbeating(), await self._connect(integration) as client:
            listed = await client.list_tools()
        return [
            {"name": t.name, "description": t.description or "", "parameters": t.input_schema or {}}
            for t in listed.tools
        ]

    @activity.defn(name=CALL_MCP)
    async def call_mcp(self, request: dict[str, Any]) -> dict[str, Any]:
        """{integration, tool, arguments} -> {response, attempt}; a tool's own error is not retried."""
        async with heartbeating(), await self._connect(request["integration"]) as client:
            result = await client.call_tool(request["tool"], request.get("arguments") or {})
        text = "\n".join(
            getattr(block, "text", "") for block in result.content if getattr(block, "text", None)
        )
        if result.is_error:
            raise errors.permanent(f"MCP tool {request['tool']!r} failed: {text[:500]}", "McpToolError")
        # The text content is the tool's own answer (JSON when it returned data); structured content wraps
        # plain values as {"result": ...}, so it is only the fallback.
        try:
            value: Any = json.loads(text)
        except ValueError:
            value = result.structured_content if result.structured_content is not None else text
        return {"response": value, "attempt": activity.info().attempt}

    async def _connect(self, integration: dict[str, Any]) -> mcp.Client:
        setup = integration.get("setup") or {}
        if setup.get("server"):
            server = self.servers.get(str(setup["server"]))
            if server is None:
                known = ", ".join(sorted(self.servers)) or "none are configured"
                raise errors.permanent(
                    f"unknown MCP server {setup['server']!r} (configured in MINT_MCP_SERVERS: {known})",
                    "McpRefused",
                )
            target: Any = mcp.StdioServerParameters(
                command=server["command"], args=server.get("args", []), env=server.get("env")
            )
        elif setup.get("url"):
            try:
                await self.egress.resolve(str(setup["url"]))
            except EgressRefused as exc:
                raise errors.permanent(str(exc), "EgressRefused") from None
            target = str(setup["url"])
        else:
            raise errors.permanent("an MCP integration needs `setup.server` or `setup.url`", "McpRefused")
        return mcp.Client(target, read_timeout_seconds=CALL_TIMEOUT_SECONDS)
