"""Integration tools served by MCP servers (Model Context Protocol), through the `mcp` package.

A task names a server in its tool's `integration.setup`: `server` is a stdio server the operator configured
(`MINT_MCP_SERVERS`; a task can never choose a command to run on the worker), or `url` is a Streamable HTTP
server, which passes the same egress check as api_call tools and is then reached at exactly the address
checked (PinnedTransport: no second lookup that a rebinding name could answer differently). Each call opens a
session, calls one tool and closes it: nothing outlives the activity, so a retried call starts clean.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any

import httpx2
from temporalio import activity

from activities.egress import Destination, EgressPolicy, EgressRefused
from activities.heartbeat import heartbeating
from contracts.calls import CallAnswer, McpCallRequest, McpIntegration, McpTool
from contracts.temporal import CALL_MCP, LIST_MCP_TOOLS
from infra.temporal import errors

if TYPE_CHECKING:  # imported where a call needs it: 0.7 s of a worker's start, for a step few tasks have
    import mcp

CALL_TIMEOUT_SECONDS = 120.0
CONNECT_TIMEOUT_SECONDS = 30.0


class McpActivities:
    def __init__(self, servers: Mapping[str, Mapping[str, object]], egress: EgressPolicy):
        self.servers = servers  # name -> {"command": ..., "args": [...], "env": {...}} (MINT_MCP_SERVERS)
        self.egress = egress

    @activity.defn(name=LIST_MCP_TOOLS)
    async def list_mcp_tools(self, integration: McpIntegration) -> list[McpTool]:
        """The server's tools."""
        async with heartbeating(), self._connect(integration) as client:
            listed = await client.list_tools()
        return [McpTool(t.name, t.description or "", t.input_schema or {}) for t in listed.tools]

    @activity.defn(name=CALL_MCP)
    async def call_mcp(self, request: McpCallRequest) -> CallAnswer:
        """The tool's answer; a tool's own error is not retried."""
        async with heartbeating(), self._connect(request.integration) as client:
            result = await client.call_tool(request.tool, request.arguments or {})
        text = "\n".join(
            getattr(block, "text", "") for block in result.content if getattr(block, "text", None)
        )
        if result.is_error:
            raise errors.permanent(f"MCP tool {request.tool!r} failed: {text[:500]}", "McpToolError")
        # The text content is the tool's own answer (JSON when it returned data); structured content wraps
        # plain values as {"result": ...}, so it is only the fallback.
        try:
            value: Any = json.loads(text)
        except ValueError:
            value = result.structured_content if result.structured_content is not None else text
        return CallAnswer(response=value, attempt=activity.info().attempt)

    @asynccontextmanager
    async def _connect(self, integration: McpIntegration) -> AsyncIterator[mcp.Client]:
        import mcp
        from mcp.client.streamable_http import streamable_http_client

        setup = integration.get("setup") or {}
        async with AsyncExitStack() as stack:
            if setup.get("server"):
                target: Any = self._stdio(str(setup["server"]))
            elif setup.get("url"):
                url = str(setup["url"])
                try:
                    destination = await self.egress.resolve(url)
                except EgressRefused as exc:
                    raise errors.permanent(str(exc), "EgressRefused") from None
                http = await stack.enter_async_context(pinned_client(destination))
                target = streamable_http_client(url, http_client=http)
            else:
                raise errors.permanent("an MCP integration needs `setup.server` or `setup.url`", "McpRefused")
            yield await stack.enter_async_context(
                mcp.Client(target, read_timeout_seconds=CALL_TIMEOUT_SECONDS)
            )

    def _stdio(self, name: str) -> mcp.StdioServerParameters:
        import mcp

        server = self.servers.get(name)
        if server is None:
            known = ", ".join(sorted(self.servers)) or "none are configured"
            raise errors.permanent(
                f"unknown MCP server {name!r} (configured in MINT_MCP_SERVERS: {known})", "McpRefused"
            )
        args, env = server.get("args"), server.get("env")
        return mcp.StdioServerParameters(
            command=str(server["command"]),
            args=[str(arg) for arg in args] if isinstance(args, list) else [],
            env={str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else None,
        )


def pinned_client(destination: Destination) -> httpx2.AsyncClient:
    """An HTTP client for one MCP server that connects only to the address the egress check approved."""
    timeout = httpx2.Timeout(CONNECT_TIMEOUT_SECONDS, read=CALL_TIMEOUT_SECONDS)
    return httpx2.AsyncClient(transport=PinnedTransport(destination), timeout=timeout)


class PinnedTransport(httpx2.AsyncBaseTransport):
    """Sends each request to the checked address, never resolving the host again; the Host header and TLS
    (SNI and the certificate check) still name the host. A request for any other origin is refused."""

    def __init__(self, destination: Destination):
        self.destination = destination
        self.inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        to = self.destination
        url = request.url
        port = url.port or (443 if url.scheme == "https" else 80)
        if (url.scheme, url.host.lower(), port) != (to.scheme, to.host, to.port):
            raise httpx2.ConnectError("only the MCP server's own origin may be reached", request=request)
        request.url = url.copy_with(host=to.address)
        if to.scheme == "https":
            request.extensions = {**request.extensions, "sni_hostname": to.host}
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()
