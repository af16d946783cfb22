"""MCP tools described by their server: a tool whose integration gives no argument schema takes its
description and parameters from the server's tool list (one listing activity per tool, per prompt step,
and again for the tools of an agent a step is handed to)."""

from __future__ import annotations

from dataclasses import replace

from temporalio import workflow

from contracts.calls import McpTool
from contracts.liveness import HEARTBEAT_TIMEOUT
from contracts.temporal import LIST_MCP_TOOLS
from workflows import language as lang
from workflows.calls import call_options
from workflows.failures import StepFailed
from workflows.step_runner import StepRunner
from workflows.tool_kinds import McpServerTool, Tool


async def described(
    runner: StepRunner, tools: dict[str, Tool], step: lang.PromptStep, here: str
) -> dict[str, Tool]:
    """The tools with each MCP tool's description and argument schema from its server, with the step's
    timeout and retries for the listing."""
    listed_tools = dict(tools)
    for name, tool in tools.items():
        if not isinstance(tool, McpServerTool) or tool.parameters:
            continue
        timeout, retry = call_options(step, runner.task.defaults)
        with runner.view.doing(f"{here} · list the tools of MCP tool {name}") as summary:
            listed = await workflow.execute_activity(
                LIST_MCP_TOOLS,
                tool.integration,
                result_type=list[McpTool],
                start_to_close_timeout=timeout,
                retry_policy=retry,
                heartbeat_timeout=HEARTBEAT_TIMEOUT,  # it heartbeats (activities/mcp.py)
                summary=summary,
                task_queue=runner.params.queues.get(LIST_MCP_TOOLS),
            )
        found = next((t for t in listed if t.name == tool.method), None)
        if found is None:
            raise StepFailed(f"MCP server of tool {name!r} has no tool {tool.method!r}")
        description = tool.description or found.description
        listed_tools[name] = replace(tool, description=description, parameters=found.parameters)
    return listed_tools
