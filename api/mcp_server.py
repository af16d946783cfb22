"""Mint's MCP server at /mcp (MCP's streamable HTTP transport): the caller's tasks as tools
(services/mcp_tools.py). The route authenticates the API key as every route does (api/deps.py: 401, the rate
limit, row-level security); the mcp package's session manager then speaks the protocol, stateless and with
JSON answers, so that any API process can answer any request (nothing is kept between requests)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import mcp_types as types
from fastapi import APIRouter, Request, Response
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from starlette.types import Receive, Scope, Send

from api.deps import Developer
from infra.settings import Settings
from services.clients import Clients
from services.mcp_tools import TaskTool, ToolAnswer, call_tool, task_tools
from services.tenancy import acting_for

router = APIRouter()
DEVELOPER = "mcp_developer"  # where the route leaves the caller's developer id, in the request's state
PAGE = 500  # tools per tools/list answer; `nextCursor` gives the next page


class McpServer:
    """The MCP server and the session manager that serves it over HTTP; `running()` must be entered (the app's
    lifespan does: api/app.py) before it answers."""

    def __init__(self, clients: Clients, settings: Settings):
        self.clients = clients
        self.settings = settings
        self.server: Server = Server(
            "mint",
            version="0.1.0",
            instructions="Each tool is one of your Mint tasks: a call runs it and answers its output.",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        self.manager = StreamableHTTPSessionManager(
            self.server,
            json_response=True,
            stateless=True,
            max_request_body_size=settings.max_body_bytes,
        )
        self.running = False

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """Serve while inside: the session manager's task group runs each request's server."""
        async with self.manager.run():
            self.running = True
            try:
                yield
            finally:
                self.running = False

    async def serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer one HTTP request to /mcp, whose caller the route has authenticated."""
        if not self.running:
            await Response("the MCP server is not running in this process", 503)(scope, receive, send)
            return
        await self.manager.handle_request(scope, receive, send)

    async def _list_tools(
        self, ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        start = _offset(params.cursor if params else None)
        with acting_for(developer := _developer(ctx)):
            tools = await task_tools(self.clients, developer)
        page = tools[start : start + PAGE]
        more = start + PAGE < len(tools)
        return types.ListToolsResult(
            tools=[_tool(t) for t in page], next_cursor=str(start + PAGE) if more else None
        )

    async def _call_tool(
        self, ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        with acting_for(developer := _developer(ctx)):
            answer = await call_tool(
                self.clients, self.settings, developer, params.name, params.arguments or {}
            )
        return _result(answer)


def _developer(ctx: ServerRequestContext) -> str:
    """The developer the route authenticated (api/deps.py), from the HTTP request the message came in."""
    request = ctx.request
    developer = getattr(request.state, DEVELOPER, None) if isinstance(request, Request) else None
    if not isinstance(developer, str):  # never so through the route; refused rather than served as nobody
        raise MCPError(
            code=types.INVALID_REQUEST, message="unauthenticated: send `Authorization: Bearer KEY`"
        )
    return developer


def _offset(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not cursor.isdigit() or len(cursor) > 9:
        raise MCPError(
            code=types.INVALID_PARAMS, message=f"invalid cursor {cursor[:40]!r}: pass a nextCursor back"
        )
    return int(cursor)


def _tool(tool: TaskTool) -> types.Tool:
    return types.Tool(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=tool.input_schema,
        _meta={"mint/task_id": tool.task_id},
    )


def _result(answer: ToolAnswer) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=answer.text)],
        structured_content=answer.structured,
        is_error=answer.is_error,
    )


class _Served(Response):
    """The route's response: the MCP server answers the request itself (its body is still unread)."""

    def __init__(self, server: McpServer):
        super().__init__()
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.server.serve(scope, receive, send)


# POST only: GET would open a stream for messages a stateless server never sends (held open for nothing), and
# DELETE would end a session there is not; the transport lets a server answer both 405.
@router.post("/mcp", include_in_schema=False)
async def mcp(request: Request, developer: Developer) -> Response:
    """MCP's streamable HTTP transport, for the caller's tasks as tools (docs/mcp.md)."""
    setattr(request.state, DEVELOPER, developer)
    server: McpServer = request.app.state.mcp
    return _Served(server)
