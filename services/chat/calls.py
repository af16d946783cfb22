"""What a chat calls out to: the model (in this process, through the model client) and server-side tools
(each on the worker, as a RunToolWorkflow: workflows/tools.py)."""

from __future__ import annotations

import time
import uuid

from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ActivityError, ApplicationError

from contracts.background import RunToolRequest
from contracts.calls import ModelAnswer, ModelRequest, Owner
from contracts.json import JsonObject
from contracts.liveness import WORKFLOW_TASK_TIMEOUT
from contracts.messages import Message, ToolCall
from contracts.temporal import RUN_TOOL_WORKFLOW, tenant_priority
from infra.models.client import EXTRA_SETTINGS, SETTINGS, KeyAhead, ModelClient
from infra.models.openai_stream import OnText
from services.chat.cast import Cast
from services.chat.request import Chat
from services.errors import ModelFailed, ModelRefused, TooLarge
from workflows import prompts, references
from workflows.agents import Agent

# The request's settings a chat passes on, over the agent's default_settings: the model layer's (it leaves
# out what a provider cannot take).
SETTING_KEYS = (*SETTINGS, *EXTRA_SETTINGS)


class ChatCalls:
    def __init__(
        self, models: ModelClient, temporal: Client, task_queue: str, max_tool_timeout: float | None
    ):
        self.models = models
        self.temporal = temporal
        self.task_queue = task_queue
        self.max_tool_timeout = max_tool_timeout  # MINT_MAX_TOOL_TIMEOUT_SECONDS

    def key_ahead(self, body: Chat, developer: str, agent: Agent) -> KeyAhead | None:
        """Start reading the key of the provider `agent`'s calls in this chat go to (the developer's or the
        agent's own secret), so that the first call does not wait for it."""
        return self.models.read_key_ahead(
            _model(body, agent), Owner(developer_id=developer, agent_id=agent.id)
        )

    async def complete(
        self,
        body: Chat,
        developer: str,
        agent: Agent,
        messages: list[Message],
        tools: list[JsonObject],
        on_text: OnText | None = None,
        unsupported: set[str] | None = None,
        key_ahead: KeyAhead | None = None,
    ) -> ModelAnswer:
        """One model call with the agent's settings, overridden by the request's; the settings its provider
        does not take are added to `unsupported`. `key_ahead`: the owner's key, read ahead (key_ahead)."""
        settings: JsonObject = {**(agent.default_settings or {})}
        for key in SETTING_KEYS:
            if getattr(body, key) is not None:
                settings[key] = getattr(body, key)
        settings.pop("model", None)
        model = _model(body, agent)
        request = ModelRequest(
            model=model,
            messages=messages,
            settings=settings,
            tools=tools,
            tool_choice=body.tool_choice if tools else None,
            response_format=body.response_format,
            at="chat",  # (not the session's id: a recording then replays in any session)
            owner=Owner(developer_id=developer, agent_id=agent.id),
        )
        if unsupported is not None:
            unsupported.update(self.models.unsupported(model, settings))
        try:
            return await self.models.complete(request, on_text, key_ahead)
        except ApplicationError as exc:
            if exc.type == "InvalidModelOutput":  # still, after the client's retries
                raise ModelFailed(exc.message, error_type="ModelBehaviorError") from None
            if exc.type == "ModelUnavailable":
                raise ModelFailed(exc.message) from None
            raise ModelRefused(exc.message) from None

    async def run_tool(
        self,
        developer: str,
        cast: Cast,
        call: ToolCall,
        variables: references.Variables | None = None,
    ) -> JsonObject:
        """One server-side tool call of the cast's agent, on the worker; a failure is a result the model
        reads, as in a task's tool loop. With `variables` (a session that passes by reference), references in
        the arguments get their values (the x-tool-parameters values in the call are not the model's and stay
        as they are), and a large result becomes a variable the model reads a preview of."""
        name, agent_id = call["function"]["name"], str(cast.agent.id)
        spec, tool, fixed = cast.specs[name], cast.tools[name], cast.fixed.get(name) or {}
        if variables is None:
            return await self._run_tool(developer, agent_id, spec, prompts.call_arguments(call))
        own = {k: v for k, v in prompts.call_arguments(call).items() if k not in fixed}
        try:
            arguments = {**variables.resolve(tool.schema, own), **fixed}
        except references.BadReference as exc:
            return prompts.tool_result("error", 0, 0, error=references.error_result(exc))
        except references.ReferencesTooLarge as exc:  # the limit a step fails on, before anything is built
            raise TooLarge(f"tool {tool.name!r}: {exc}") from None
        result = await self._run_tool(developer, agent_id, spec, arguments)
        return variables.keep(tool.name, result)[0]

    async def _run_tool(
        self, developer: str, agent_id: str, spec: JsonObject, arguments: JsonObject
    ) -> JsonObject:
        started = time.monotonic()
        try:
            data = await self.temporal.execute_workflow(
                RUN_TOOL_WORKFLOW,
                RunToolRequest(
                    owner=Owner(developer_id=developer, agent_id=agent_id),
                    tool=spec,
                    arguments=arguments,
                    max_tool_timeout=self.max_tool_timeout,
                ),
                id=f"chat-tool-{uuid.uuid4()}",
                task_queue=self.task_queue,
                task_timeout=WORKFLOW_TASK_TIMEOUT,  # a lost worker costs seconds (contracts/liveness.py)
                priority=tenant_priority(developer),
            )
        except WorkflowFailureError as exc:
            cause = exc.cause.cause if isinstance(exc.cause, ActivityError) else exc.cause
            code = cause.type if isinstance(cause, ApplicationError) and cause.type else "tool_failed"
            message = cause.message if isinstance(cause, ApplicationError) else str(cause)
            return prompts.tool_result(
                "error", started, time.monotonic(), error={"code": code, "message": message}
            )
        return prompts.tool_result("success", started, time.monotonic(), data)


def _model(body: Chat, agent: Agent) -> str | None:
    """The model a chat's call goes to: the request's, else the agent's default_settings', else its own."""
    named = (agent.default_settings or {}).get("model")
    return body.model or (named if isinstance(named, str) else None) or agent.model
