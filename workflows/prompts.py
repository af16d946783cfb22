"""What a prompt step sends and returns: tool schemas with partially applied arguments, and output shapes.

Pure functions, run inside the workflow; the model call itself is an activity (activities/models.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeGuard

if TYPE_CHECKING:
    from contracts.executions import ExecutionParams
    from workflows import language as lang
    from workflows.language import Message as PromptMessage
    from workflows.values import Names, ValueEvaluator

from contracts.json import JsonObject, JsonValue
from contracts.messages import Completion, ContentPart, Message, ToolCall
from workflows.failures import TypedFailure
from workflows.tool_kinds import BuiltinTool, Tool

MAX_TURNS = 10
TOOL_PARAMETERS_KEY = "x-tool-parameters"
Template = Callable[[str, Mapping[str, object]], Any]  # ValueEvaluator.template


def metadata_layers(params: ExecutionParams) -> list[JsonObject | None]:
    """An execution's metadata, lowest precedence first: its agent's, its task's, its own."""
    layers = (
        params.agent.get("metadata"),
        params.task_info.get("metadata"),
        params.execution_info.get("metadata"),
    )
    return [layer if isinstance(layer, dict) else None for layer in layers]


def task_metadata(params: ExecutionParams) -> JsonObject:
    """The metadata a task's expressions and templates read as `metadata`: execution > task > agent."""
    merged: JsonObject = {}
    for layer in metadata_layers(params):
        merged.update(layer or {})
    return merged


def step_arguments(
    step: lang.ToolCallStep, tool: Tool, names: Names, values: ValueEvaluator, params: ExecutionParams
) -> Any:
    """A tool call step's arguments: its own, evaluated, over those `x-tool-parameters` fix (partial
    application: fixed values fill what the step leaves out)."""
    arguments = values.value(step.tool_arguments, names) if step.tool_arguments is not None else {}
    if isinstance(arguments, dict):
        arguments = {**fixed_arguments(tool, metadata_layers(params)), **arguments}
    return arguments


def fixed_arguments(tool: Tool, layers: list[JsonObject | None]) -> JsonObject:
    """Arguments fixed by `x-tool-parameters` in metadata, the later layer winning (for tasks: agent, task,
    execution). A `"<type>:<name>"` entry fixes that tool's arguments; a bare key fixes that argument of
    every tool that declares it (the seed's `favorite: Emma Stone`)."""
    properties = tool.schema.get("properties")
    declared = set(properties) if isinstance(properties, dict) else set()
    fixed: JsonObject = {}
    for metadata in layers:
        entries = (metadata or {}).get(TOOL_PARAMETERS_KEY)
        if not isinstance(entries, dict):
            continue
        for key, value in entries.items():
            if key == f"{tool.type}:{tool.name}" and isinstance(value, dict):
                fixed.update(value)
            elif ":" not in key and key in declared:
                fixed[key] = value
    return fixed


def offered_tool(tool: Tool, fixed: JsonObject) -> JsonObject:
    """The tool as the model sees it (OpenAI function format), without the arguments Mint fills in; one of
    Anthropic's built-in tools as its type and settings, under the tool's name (infra/models turns it into
    what Anthropic takes, and refuses it for other providers)."""
    if isinstance(tool, BuiltinTool):
        return {"type": tool.type, "function": {"name": tool.name}, tool.type: tool.settings}
    schema = dict(tool.schema)
    properties, required = schema.get("properties"), schema.get("required")
    if fixed and isinstance(properties, dict):
        schema["properties"] = {k: v for k, v in properties.items() if k not in fixed}
        if isinstance(required, list):
            schema["required"] = [k for k in required if k not in fixed]
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": schema},
    }


def call_arguments(call: ToolCall) -> JsonObject:
    """A model's tool call arguments (JSON text) as a mapping; raises ValueError when they are not one."""
    raw: object = call["function"].get("arguments") or "{}"
    arguments = json.loads(raw) if isinstance(raw, str) else raw
    if not isinstance(arguments, dict):
        raise ValueError(f"arguments must be a JSON object, got {type(arguments).__name__}")
    return arguments


def step_output(response: Completion, unwrap: bool, response_format: JsonObject | None, here: str) -> object:
    """The prompt step's output: the chat completion (each choice also carries `content`, the seed's
    `_["choices"][0].content`), or with `unwrap` just the answer (parsed when JSON was asked for: a
    DecodeError when it is not JSON)."""
    message = response["choices"][0]["message"]
    if unwrap:
        content = message.get("content")
        asked = response_format.get("type") if response_format else None
        if asked in ("json_object", "json_schema") and isinstance(content, str) and content:
            try:
                return json.loads(strip_fence(content.strip()))
            except ValueError:
                raise TypedFailure(
                    "DecodeError", f"{here}: the model's answer is not the JSON that was asked for"
                ) from None
        return content
    output: dict[str, object] = {
        k: v for k, v in response.items() if k in ("id", "model", "created", "usage")
    }
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
    status: str, started: float, ended: float, data: JsonValue = None, error: JsonValue = None
) -> JsonObject:
    """A structured tool result (JAF): what the model reads back, and what the transition records."""
    result: JsonObject = {"status": status, "duration_ms": round((ended - started) * 1000)}
    if status == "success":
        result["data"] = data
    else:
        result["error"] = error
    return result


class BadContent(Exception):
    """A prompt message's content is neither text nor a list of content parts."""


def render_messages(
    prompt: str | list[PromptMessage], scope: Mapping[str, object], template: Template
) -> list[Message]:
    """A prompt step's prompt as chat messages: a string is one user message; each content is a template
    (or, with `$ `, an expression) over `scope`."""
    if isinstance(prompt, str):
        return [{"role": "user", "content": _content(prompt, scope, template)}]
    messages = []
    for message in prompt:
        rendered: Message = {
            "role": message.role,
            "content": _content(message.content, scope, template),
        }
        if message.name:
            rendered["name"] = message.name
        messages.append(rendered)
    return messages


def _content(content: object, scope: Mapping[str, object], template: Template) -> str | list[ContentPart]:
    """A message's content rendered: text, or content parts whose text is rendered."""
    if isinstance(content, str):
        value = template(content, scope)
        return value if isinstance(value, str | list) else json.dumps(value)
    if isinstance(content, list):  # content parts: the text of each part is a template
        parts: list[ContentPart] = []
        for part in content:
            if not _is_part(part):
                raise BadContent("each content part must be an object with a `type` (text, image_url)")
            text = part.get("text")
            parts.append({**part, "text": template(text, scope)} if isinstance(text, str) else part)
        return parts
    raise BadContent("message content must be text or a list of content parts")


def _is_part(value: object) -> TypeGuard[ContentPart]:
    return isinstance(value, dict) and isinstance(value.get("type"), str)
