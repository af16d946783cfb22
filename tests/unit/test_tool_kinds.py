"""Tools parsed once from the JSON they are stored as (workflows/tool_kinds.py): each type to its kind, with the
schema, description and `on_error` the runtime reads."""

from __future__ import annotations

import pytest

from workflows.language import ToolDef
from workflows.tool_kinds import (
    OPEN_OBJECT,
    ApiCallTool,
    BuiltinTool,
    FunctionTool,
    IntegrationTool,
    McpServerTool,
    SystemTool,
    UnknownToolType,
    parse_tool,
    parse_tools,
    runs_on_client,
)


def stored(raw: dict) -> dict:
    """A tool as the API stores it: ToolDef dumped by alias."""
    return ToolDef.model_validate(raw).model_dump(mode="json", by_alias=True)


def test_a_function_tool_keeps_its_schema_and_description_and_runs_on_the_client():
    schema = {"type": "object", "properties": {"to": {"type": "string"}}}
    tool = parse_tool(stored({"name": "send", "function": {"description": "Send it", "parameters": schema}}))
    assert isinstance(tool, FunctionTool) and runs_on_client(tool)
    assert (tool.name, tool.description, tool.schema, tool.fails_step) == ("send", "Send it", schema, False)


def test_an_api_call_reads_its_params_schema_and_on_error():
    raw = {"name": "get", "type": "api_call", "api_call": {"url": "https://x.example"}, "on_error": "fail"}
    tool = parse_tool(stored(raw))
    assert isinstance(tool, ApiCallTool) and not runs_on_client(tool)
    assert tool.api_call["url"] == "https://x.example" and tool.schema == OPEN_OBJECT and tool.fails_step


def test_system_integration_and_mcp_tools_are_their_own_kinds():
    system = parse_tool(stored({"name": "s", "type": "system", "system": {"call": "agent.doc.create"}}))
    brave = parse_tool(stored({"name": "b", "type": "integration", "integration": {"provider": "brave"}}))
    mcp = parse_tool({"name": "m", "type": "integration", "integration": {"provider": "mcp", "setup": {}}})
    assert isinstance(system, SystemTool) and system.system == {"call": "agent.doc.create"}
    assert isinstance(brave, IntegrationTool) and brave.parameters is not None  # the provider's schema
    assert isinstance(mcp, McpServerTool) and (mcp.method, mcp.type) == ("m", "integration")


def test_an_anthropic_built_in_tool_keeps_its_type_and_settings():
    screen = {"display_width_px": 800, "display_height_px": 600}
    tool = parse_tool(stored({"name": "screen", "type": "computer_20241022", "computer_20241022": screen}))
    assert isinstance(tool, BuiltinTool) and runs_on_client(tool)
    assert (tool.type, tool.settings["display_height_px"]) == ("computer_20241022", 600)


def test_a_later_tool_of_the_same_name_wins_and_an_unknown_type_is_refused():
    tools = parse_tools([{"name": "t", "type": "function"}, {"name": "t", "type": "system", "system": {}}])
    assert list(tools) == ["t"] and isinstance(tools["t"], SystemTool)
    with pytest.raises(UnknownToolType):
        parse_tool({"name": "t", "type": "teleport"})
