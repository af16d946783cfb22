"""What a prompt step sends and returns: tool schemas with partially applied arguments, and output shapes.

Pure functions, run inside the workflow; the model call itself is an activity (activities/models.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from contracts.executions import ExecutionParams
    from workflows.language import Message

from contracts.anthropic_tools import ANTHROPIC_TOOLS
from workflows.integrations import arguments_schema

MAX_TURNS = 10
TOOL_PARAMETERS_KEY = "x-tool-parameters"
OPEN_OBJECT: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": True}


def parameters_schema(tool: dict[str, Any]) -> dict[str, Any]:
    """The JSON schema of a tool's arguments, as written in its definition."""
    spec = tool.get(tool["type"]) or {}
    if tool["type"] == "function":
        return spec.get("parameters") or OPEN_OBJECT
    if tool["type"] == "api_call":
        return spec.get("params_schema") or OPEN_OBJECT
    declared = arguments_schema(spec) if tool["type"] == "integration" else None
    return spec.get("parameters") or tool.get("parameters") or declared or OPEN_OBJECT


def metadata_layers(params: ExecutionParams) -> list[dict[str, Any] | None]:
    """An execution's metadata, lowest precedence first: its agent's, its task's, its own."""
    return [
        params.agent.get("metadata"),
        params.task_info.get("metadata"),
        params.execution_info.get("metadata"),
    ]


def task_metadata(params: ExecutionParams) -> dict[str, Any]:
    """The metadata a task's expressions and templates read as `metadata`: execution > task > agent."""
    merged: dict[str, Any] = {}
    for layer in metadata_layers(params):
        merged.update(layer if isinstance(layer, dict) else {})
    return merged


def fixed_arguments(tool: dict[str, Any], layers: list[dict[str, Any] | None]) -> dict[str, Any]:
    """Arguments fixed by `x-tool-parameters` in metadata, the later layer winning (for tasks: agent, task,
    execution). A `"<type>:<name>"` entry fixes that tool's arguments; a bare key fixes that argument of
    every tool that declares it (the seed's `favorite: Emma Stone`)."""
    declared = set((parameters_schema(tool).get("properties") or {}).keys())
    fixed: dict[str, Any] = {}
    for metadata in layers:
        entries = (metadata or {}).get(TOOL_PARAMETERS_KEY)
        if not isinstance(entries, dict):
            continue
        for key, value in entries.items():
            if key == f"{tool['type']}:{tool['name']}" and isinstance(value, dict):
                fixed.update(value)
            elif ":" not in key and key in declared:
                fixed[key] = value
    return fixed


def offered_tool(tool: dict[str, Any], fixed: dict[str, Any]) -> dict[str, Any]:
    """The tool as the model sees it (OpenAI function format), without the arguments Mint fills in; one of
    Anthropic's built-in tools as its type and settings, under the tool's name (infra/models turns it into
    what Anthropic takes, and refuses it for other providers)."""
    if tool["type"] in ANTHROPIC_TOOLS:
        settings = tool.get(tool["type"]) or {}
        return {"type": tool["type"], "function": {"name": tool["name"]}, tool["type"]: settings}
    schema = dict(parameters_schema(tool))
    if fixed and isinstance(schema.get("properties"), dict):
        schema["properties"] = {k: v for k, v in schema["properties"].items() if k not in fixed}
        if isinstance(schema.get("required"), list):
            schema["required"] = [k for k in schema["required"] if k not in fixed]
    description = tool.get("description") or (tool.get("function") or {}).get("description") or ""
    return {
        "type": "function",
        "function": {"name": tool["name"], "description": description, "parameters": schema},
    }


def call_arguments(call: dict[str, Any]) -> dict[str, Any]:
    """A model's tool call arguments (JSON text) as a mapping; raises ValueError when they are not one."""
    raw = call["function"].get("arguments") or "{}"
    arguments = json.loads(raw) if isinstance(raw, str) else raw
    if not isinstance(arguments, dict):
        raise ValueError(f"arguments must be a JSON object, got {type(arguments).__name__}")
    return arguments


def step_output(response: dict[str, Any], unwrap: bool, response_format: dict[str, Any] | None) -> Any:
    """The prompt step's output: the chat completion (each choice also carries `content`, the seed's
    `_["choices"][0].content`), or with `unwrap` just the answer (parsed when JSON was asked for)."""
    message = response["choices"][0]["message"]
    if unwrap:
        content = message.get("content")
        if response_format and response_format.get("type") in ("json_object", "json_schema") and content:
            return json.loads(strip_fence(content.strip()))
        return content
    output = {k: v for k, v in response.items() if k in ("id", "model", "created", "usage")}
    output["choices"] = [
        {
            "index": choice.get("index", i),
            "message": choice["message"],
            "finish_reason": choice.get("finish_reason"),
            "content": choice["message"].get("content"),
            "tool_calls": choice["message"].get("tool_calls"),
        }
        for i, choice in enumerate(response["choices"])
    ]
    return output


def strip_fence(text: str) -> str:
    """Models asked for JSON sometimes wrap it in a ```json fence."""
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    return text.strip()


def tool_result(
    status: str, started: float, ended: float, data: Any = None, error: Any = None
) -> dict[str, Any]:
    """A structured tool result (JAF): what the model reads back, and what the transition records."""
    result: dict[str, Any] = {"status": status, "duration_ms": round((ended - started) * 1000)}
    if status == "success":
        result["data"] = data
    else:
        result["error"] = error
    return result


class BadContent(Exception):
    """A prompt message's content is neither text nor a list of content parts."""


def render_messages(
    prompt: str | list[Message], scope: dict[str, Any], template: Callable[[str, dict[str, Any]], Any]
) -> list[dict[str, Any]]:
    """A prompt step's prompt as chat messages: a string is one user message; each content is a template
    (or, with `$ `, an expression) over `scope`."""
    if isinstance(prompt, str):
        return [{"role": "user", "content": _content(prompt, scope, template)}]
    messages = []
    for message in prompt:
        rendered: dict[str, Any] = {
            "role": message.role,
            "content": _content(message.content, scope, template),
        }
        if message.name:
            rendered["name"] = message.name
        messages.append(rendered)
    return messages


def _content(content: Any, scope: dict[str, Any], template: Callable[[str, dict[str, Any]], Any]) -> Any:
    """A message's content rendered: text, or content parts whose text is rendered."""
    if isinstance(content, str):
        value = template(content, scope)
        return value if isinstance(value, str | list) else json.dumps(value)
    if isinstance(content, list):  # content parts: the text of each part is a template
        return [
            {**part, "text": template(part["text"], scope)}
            if isinstance(part, dict) and isinstance(part.get("text"), str)
            else part
            for part in content
        ]
    raise BadContent("message content must be text or a list of content parts")
