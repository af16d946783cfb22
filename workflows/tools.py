"""RunToolWorkflow: one server-side tool call (api_call, system, MCP) for a session chat's tool loop.

Chat runs in the API, but tools run where task tools run, as activities on the worker, with the same egress
checks, retries and idempotency keys; a tiny workflow per call is how the API reaches them.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from contracts.background import RunToolRequest
from contracts.calls import CallAnswer
from contracts.executions import DEFAULT_MAX_TOOL_TIMEOUT_SECONDS
from contracts.liveness import HEARTBEAT_TIMEOUT
from contracts.temporal import RUN_TOOL_WORKFLOW
from workflows import language as lang
from workflows.calls import (
    ToolError,
    call_options,
    tool_activity,
)
from workflows.tool_kinds import parse_tool
from workflows.values import ValueEvaluator


@workflow.defn(name=RUN_TOOL_WORKFLOW)
class RunToolWorkflow:
    @workflow.run
    async def run(self, request: RunToolRequest) -> Any:
        """The tool's output."""
        tool = parse_tool(request.tool)
        values = ValueEvaluator("dollar", workflow.random(), workflow.now)
        limit = request.max_tool_timeout or DEFAULT_MAX_TOOL_TIMEOUT_SECONDS
        try:
            planned = tool_activity(
                tool,
                request.arguments,
                request.owner,
                values,
                lambda: str(workflow.uuid4()),
                limit,
                workflow.patched,
            )
        except ToolError as exc:
            raise ApplicationError(str(exc), type="BadToolCall", non_retryable=True) from None
        timeout, retry = call_options(lang.ToolCallStep(tool=tool.name), None, planned.deadline)
        answer = await workflow.execute_activity(
            planned.name,
            planned.request,
            result_type=CallAnswer,
            start_to_close_timeout=timeout,
            retry_policy=retry,
            heartbeat_timeout=HEARTBEAT_TIMEOUT,
            summary=f"tool {tool.name} ({tool.type})",
        )
        return answer.response
