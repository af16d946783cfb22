"""A developer's tasks as MCP tools (api/mcp_server.py serves them): one tool per task, and a call of one
starts an execution of its task and answers its output once it ends, or where it stands after a wait."""

from __future__ import annotations

import asyncio
import json
import re
import unicodedata
from dataclasses import dataclass

from contracts.json import JsonObject, JsonValue
from contracts.records.executions import Execution
from contracts.transitions import TERMINAL_STATUSES
from infra.settings import Settings
from infra.store.task_catalog import CatalogEntry, TaskCatalog
from services.clients import Clients
from services.errors import NotFound, ServiceError
from services.executions.start import start_execution
from workflows.storable import find_unstorable, format_path

MAX_NAME = 64  # MCP's tool names: ^[a-zA-Z0-9_-]{1,64}$
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
OPEN_OBJECT: JsonObject = {"type": "object"}  # a task without an object input_schema takes any arguments


@dataclass(frozen=True)
class TaskTool:
    """A task as an MCP tool: `title` is the task's name as it is, for people."""

    name: str
    title: str
    task_id: str
    description: str
    input_schema: JsonObject


@dataclass(frozen=True)
class ToolAnswer:
    """What a tool call answers: `text` (the content), `structured` (structuredContent), `is_error`."""

    text: str
    structured: JsonObject | None = None
    is_error: bool = False


def tool_names(entries: list[CatalogEntry]) -> dict[str, str]:
    """{tool name: task id}, the entries taken oldest first: each task's name made MCP-safe, and a name
    already given out made unique with the start of the task's id (so a task keeps its tool name as others
    are added)."""
    names: dict[str, str] = {}
    for entry in entries:
        base = safe_name(entry.name)
        name = base
        if name in names:
            name = f"{base[: MAX_NAME - 9]}_{entry.id.replace('-', '')[:8]}"
        count = 2
        while name in names:  # a task named like another's unique name
            suffix = f"_{count}"
            name, count = f"{base[: MAX_NAME - len(suffix)]}{suffix}", count + 1
        names[name] = entry.id
    return names


def safe_name(name: str) -> str:
    """`name` in the characters MCP allows in a tool name (accents dropped, anything else an underscore)."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    return _UNSAFE.sub("_", ascii_name).strip("_")[:MAX_NAME] or "task"


async def task_tools(clients: Clients, developer: str) -> list[TaskTool]:
    """The developer's tasks as tools, oldest first."""
    entries = await TaskCatalog(clients.store.pool).entries(developer)
    by_id = {entry.id: entry for entry in entries}
    return [_tool(name, by_id[task_id]) for name, task_id in tool_names(entries).items()]


def _tool(name: str, entry: CatalogEntry) -> TaskTool:
    described = entry.description if isinstance(entry.description, str) and entry.description.strip() else ""
    description = described or f"Runs the Mint task {entry.name!r} and answers its output."
    return TaskTool(name, entry.name, entry.id, description, tool_schema(entry.input_schema))


def tool_schema(input_schema: JsonValue) -> JsonObject:
    """The task's input_schema as a tool's inputSchema, which must describe an object: an object schema
    as it is (its `type` added when it has none), anything else the open object (the task checks its input
    against its own schema when it starts)."""
    if not isinstance(input_schema, dict):
        return dict(OPEN_OBJECT)
    if "type" not in input_schema:
        return {"type": "object", **input_schema}
    return input_schema if input_schema["type"] == "object" else dict(OPEN_OBJECT)


async def call_tool(
    clients: Clients, settings: Settings, developer: str, name: str, arguments: JsonObject
) -> ToolAnswer:
    """Start an execution of the task the tool `name` stands for, with `arguments` as its input; answer its
    output if it ends within `settings.mcp_wait` seconds, else its id and status. The task is looked up
    among the caller's own only: another developer's is an unknown tool."""
    task_id = tool_names(await TaskCatalog(clients.store.pool).names(developer)).get(name)
    if task_id is None:
        return ToolAnswer(f"Unknown tool: {name}", is_error=True)
    problems = find_unstorable(arguments)
    if problems:
        where = "; ".join(f"{format_path(('arguments', *p.loc))}: {p.message}" for p in problems[:5])
        return ToolAnswer(f"invalid arguments: {where}", is_error=True)
    try:
        execution = await start_execution(clients, settings, developer, task_id, arguments, {})
    except NotFound:  # deleted since it was listed
        return ToolAnswer(f"Unknown tool: {name}", is_error=True)
    except ServiceError as exc:  # the input does not fit the task's schema, a limit, Temporal unreachable
        return ToolAnswer(exc.message, is_error=True)
    return answer(await settled(clients, developer, execution, settings.mcp_wait), settings.mcp_wait)


async def settled(clients: Clients, developer: str, execution: Execution, wait: float) -> Execution:
    """The execution once it has ended or waits for input, or as it stands after `wait` seconds. Woken by
    its changes (infra/store/execution_events.py), not by polling."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    with clients.events.watch(execution.id) as watch:  # before the first read: a change after it wakes it
        while True:
            execution = await clients.store.get_execution(developer, execution.id) or execution
            if execution.status in (*TERMINAL_STATUSES, "awaiting_input") or loop.time() >= deadline:
                return execution
            await watch.wait_until(deadline)


def answer(execution: Execution, wait: float) -> ToolAnswer:
    """The tool call's answer for the execution as it stands."""
    if execution.status == "succeeded":
        output = execution.output
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        # structuredContent is a JSON object: an output that is not one is wrapped, as the mcp package does.
        return ToolAnswer(text, output if isinstance(output, dict) else {"result": output})
    where: JsonObject = {"id": execution.id, "execution_id": execution.id, "status": execution.status}
    if execution.status in ("failed", "cancelled"):
        message = execution.error or f"execution {execution.id} {execution.status}"
        return ToolAnswer(message, {**where, "error": message}, is_error=True)
    if execution.status == "awaiting_input":
        text = (
            f"Execution {execution.id} is awaiting input: answer it with PUT /executions/{execution.id} "
            '{"status": "running", "input": {...}}, then follow it with GET /executions/' + execution.id
        )
    else:
        text = (
            f"Execution {execution.id} is {execution.status}: it had not ended after {wait:g} s "
            f"(MINT_MCP_WAIT). Follow it with GET /executions/{execution.id}"
        )
    return ToolAnswer(text, where)
