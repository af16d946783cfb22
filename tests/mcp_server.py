"""A local MCP server over stdio for the integration-tool tests (`python tests/mcp_server.py`)."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("calc")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


if __name__ == "__main__":
    server.run("stdio")
