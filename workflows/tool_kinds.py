"""The tools an execution calls, parsed once from the JSON they are stored as (a ToolDef dumped by alias,
workflows/language/tools.py) into one frozen type per kind, which the code that runs a tool matches on.

Parsing is lenient: a tool was checked when it was created, and one stored before a check existed still
parses; what it cannot do is refused when it is called (workflows/calls.py), as a failure of that call. The
payloads keep the stored JSON (ExecutionParams.tools, RunToolRequest.tool): only the workflow's code sees
these types, so recorded histories replay unchanged."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeGuard

from contracts.anthropic_tools import ANTHROPIC_TOOLS
from contracts.calls import McpIntegration
from contracts.json import JsonObject, JsonValue
from workflows.integrations import MCP, arguments_schema

OPEN_OBJECT: JsonObject = {"type": "object", "properties": {}, "additionalProperties": True}


@dataclass(frozen=True)
class ToolBase:
    """What every kind has: its name, what the model reads of it, the JSON schema of its arguments (None:
    any object), and whether a failed call in a prompt's tool loop fails the step (`on_error: fail`) rather
    than going back to the model as an error result."""

    name: str
    description: str
    parameters: JsonObject | None
    fails_step: bool

    @property
    def schema(self) -> JsonObject:
        """The JSON schema of its arguments, as written in its definition."""
        return self.parameters or OPEN_OBJECT


@dataclass(frozen=True)
class FunctionTool(ToolBase):
    """A `function` tool: the client runs it (its call is handed back, or waited for in a task)."""

    type = "function"


@dataclass(frozen=True)
class BuiltinTool(ToolBase):
    """One of Anthropic's built-in tools (`computer_20241022`...): the client runs it; the model is offered
    its type and settings."""

    type: str
    settings: JsonObject


@dataclass(frozen=True)
class ApiCallTool(ToolBase):
    """An `api_call` tool: an HTTP request whose strings are templates over the call's arguments."""

    type = "api_call"
    api_call: JsonObject  # ApiCallDef as stored: method, url, headers, params, json, ...


@dataclass(frozen=True)
class SystemTool(ToolBase):
    """A `system` tool: one of Mint's own operations (workflows/system_ops.py)."""

    type = "system"
    system: JsonObject  # resource, subresource, operation


@dataclass(frozen=True)
class IntegrationTool(ToolBase):
    """An `integration` tool of a provider Mint calls itself (workflows/integrations.py), or names one it
    does not run (refused when called)."""

    type = "integration"
    integration: JsonObject  # provider, method, setup, arguments


@dataclass(frozen=True)
class McpServerTool(ToolBase):
    """An `integration` tool whose provider is `mcp`: tool `method` on the MCP server its setup names."""

    type = "integration"
    integration: McpIntegration
    method: str


Tool = FunctionTool | BuiltinTool | ApiCallTool | SystemTool | IntegrationTool | McpServerTool
# The kinds the client runs: a call of one is handed back to it, or waited for in a task.
ClientTool = FunctionTool | BuiltinTool


class UnknownToolType(ValueError):
    """A stored tool of a type Mint does not have (ToolDef admits none)."""


def parse_tool(raw: JsonObject) -> Tool:
    """A tool as stored, as its kind."""
    name, kind = str(raw.get("name")), raw.get("type")
    function = _object(raw.get("function")) or {}
    description = _text(raw.get("description")) or _text(function.get("description")) or ""
    fails = raw.get("on_error") == "fail"
    spec = _object(raw.get(kind)) if isinstance(kind, str) else None
    parameters = _object((spec or {}).get("parameters"))
    match kind:
        case "function":
            return FunctionTool(name, description, parameters, fails)
        case "api_call":
            api_call = spec or {}
            return ApiCallTool(name, description, _object(api_call.get("params_schema")), fails, api_call)
        case "system":
            return SystemTool(name, description, parameters, fails, spec or {})
        case "integration":
            return _integration(name, description, fails, spec or {})
        case str() if kind in ANTHROPIC_TOOLS:
            return BuiltinTool(name, description, parameters, fails, kind, spec or {})
        case _:
            raise UnknownToolType(f"tool {name!r} has no type Mint knows: {kind!r}")


def _integration(name: str, description: str, fails: bool, integration: JsonObject) -> Tool:
    parameters = _object(integration.get("parameters"))
    if _is_mcp(integration):
        method = integration.get("method") or name
        return McpServerTool(name, description, parameters, fails, integration, method)
    declared = parameters or _object(arguments_schema(integration))
    return IntegrationTool(name, description, declared, fails, integration)


def _is_mcp(integration: JsonObject) -> TypeGuard[McpIntegration]:
    """Whether an integration is an MCP server's, with McpIntegration's keys as their types."""
    return (
        integration.get("provider") == MCP
        and isinstance(integration.get("method", ""), str)
        and all(isinstance(integration.get(key, {}), dict) for key in ("setup", "parameters"))
    )


def parse_tools(raw: list[JsonObject]) -> dict[str, Tool]:
    """Stored tools by name (a later one of the same name wins, in the first one's place)."""
    return {tool.name: tool for tool in map(parse_tool, raw)}


def runs_on_client(tool: Tool) -> TypeGuard[ClientTool]:
    """Whether the client runs this tool (a `function` tool, or one of Anthropic's built-in ones)."""
    return isinstance(tool, FunctionTool | BuiltinTool)


def _object(value: JsonValue) -> JsonObject | None:
    return value if isinstance(value, dict) else None


def _text(value: JsonValue) -> str | None:
    return value if isinstance(value, str) else None
