"""The steps that call out of the workflow: tool calls, prompts (with their tool-running loop) and doc search.

Each call is an activity with the step's timeout and retries; its CallResult's attempts, usage and cost go on
the step's transition; a `function` tool is answered by the client through the interpreter's wait. Shaping
a call (timeouts, retries, where it runs) is calls.py's business, a prompt's messages prompts.py's; CallSteps
(sharing one Interpreter's values and log) runs them."""

from __future__ import annotations

import json
from collections.abc import Awaitable
from dataclasses import dataclass, replace
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError

from contracts.calls import CallAnswer, McpTool, ModelAnswer, ModelRequest, Owner, SearchRequest
from contracts.liveness import HEARTBEAT_TIMEOUT
from contracts.temporal import CALL_MODEL, LIST_MCP_TOOLS, SEARCH_DOCS
from contracts.transitions import Position
from workflows import language as lang
from workflows import prompts
from workflows.calls import (
    CALLS_IN_WORKER_PATCH,
    CallRequest,
    ToolError,
    call_options,
    runs_in_worker,
    tool_activity,
)
from workflows.failures import StepFailed, TypedFailure, failed_tool, failure_message, tool_error_code
from workflows.step_runner import StepRunner
from workflows.tool_loop import MaxTurnsExceeded, ToolLoop
from workflows.visibility import where
from workflows.worker_calls import WorkerCalls

# A call that belongs to no step (a guardrail's) takes the task's defaults for timeouts and retries.
OTHER_CALL = lang.CallStep()


@dataclass
class CallResult:
    """A call's output, how many attempts it took and, for model calls, the tokens used and their cost
    (recorded in the step transition's metadata; the writer sums usage on the execution)."""

    output: Any
    attempts: int
    usage: dict[str, Any] | None = None
    cost: float | None = None
    call: dict[str, Any] | None = None  # a model call's `model` and `started_at`, for traces

    def metadata(self) -> dict[str, Any]:
        used = {"usage": self.usage, "cost": self.cost, **(self.call or {})} if self.usage is not None else {}
        return {"attempts": self.attempts, **used}


class CallSteps:
    """Runs one interpreter's tool call, prompt and search steps."""

    def __init__(self, interpreter: StepRunner):
        self.interpreter = interpreter
        self.in_worker = WorkerCalls(interpreter.log)

    # Tool calls ------------------------------------------------------------------------------------------

    async def tool_call(
        self,
        step: lang.ToolCallStep,
        names: dict[str, Any],
        position: Position,
        metadata: dict[str, Any] | None,
    ) -> Any:
        """Call the step's tool with its arguments."""
        values = self.interpreter.values
        tool = self.interpreter.tools.get(step.tool_name)
        if tool is None:
            raise StepFailed(f"tool {step.tool_name!r} is not defined for this task or its agent")
        arguments = values.value(step.tool_arguments, names) if step.tool_arguments is not None else {}
        if isinstance(arguments, dict):  # partial application: fixed values fill what the step leaves out
            arguments = {**prompts.fixed_arguments(tool, self._metadata_layers()), **arguments}
        return await self._run_tool(tool, arguments, step, position, metadata)

    async def _run_tool(
        self,
        tool: dict[str, Any],
        arguments: Any,
        step: lang.CallStep,
        position: Position,
        metadata: dict[str, Any] | None,
        call_id: str | None = None,
    ) -> Any:
        """Call any kind of tool; function tools are answered by the client through a wait."""
        params = self.interpreter.params
        if tool["type"] == "function":
            call = {"type": "function", "name": tool["name"], "arguments": arguments}
            if call_id is not None:
                call["id"] = call_id
            return await self.interpreter.waits.wait(
                {"tool_call": call}, position, metadata, step.timeout, label=step.label
            )
        try:
            planned = tool_activity(
                tool,
                arguments,
                self._owner(),
                self.interpreter.values,
                lambda: str(workflow.uuid4()),
                params.max_tool_timeout,
            )
        except ToolError as exc:
            raise StepFailed(str(exc)) from None
        summary = f"{where(position, step.label)} · tool {tool['name']} ({tool['type']})"
        return await self._activity(planned.name, planned.request, step, summary, planned.deadline)

    async def _activity(
        self,
        name: str,
        request: CallRequest,
        step: lang.CallStep,
        summary: str,
        deadline: float | None = None,
    ) -> CallResult:
        """A call activity with the step's timeout and retries; transitions so far are written meanwhile.
        `summary` names the step and what it calls, in the Temporal UI's timeline and current details."""
        with self.interpreter.view.doing(summary):
            return await self._call(name, request, step, summary, deadline)

    async def _call(
        self, name: str, request: CallRequest, step: lang.CallStep, summary: str, deadline: float | None
    ) -> CallResult:
        defaults = self.interpreter.task.defaults
        timeout, retry = call_options(step, defaults, deadline)
        result_type = ModelAnswer if name == CALL_MODEL else CallAnswer
        longest = timeout.total_seconds() if deadline is None else min(deadline, timeout.total_seconds())
        queue = self.interpreter.params.queues.get(name)  # a task queue of its own (ExecutionParams.queues)
        if runs_in_worker(step, defaults, longest, queue) and workflow.patched(CALLS_IN_WORKER_PATCH):
            answer = await self.in_worker.call(name, request, result_type, timeout, retry, summary)
        else:
            self.interpreter.log.submit()
            answer = await workflow.execute_activity(
                name,
                request,
                result_type=result_type,
                start_to_close_timeout=timeout,
                retry_policy=retry,
                heartbeat_timeout=HEARTBEAT_TIMEOUT,
                summary=summary,
                task_queue=queue,
            )
        if isinstance(answer, ModelAnswer):
            return CallResult(answer.response, answer.attempt, answer.usage, answer.cost)
        return CallResult(answer.response, answer.attempt)

    def _owner(self) -> Owner:
        """Whose calls this execution makes: its developer's, for its agent."""
        params = self.interpreter.params
        return Owner(params.developer_id, params.agent.get("id"))

    def _metadata_layers(self) -> list[dict[str, Any] | None]:
        """Where `x-tool-parameters` come from in a task, lowest precedence first."""
        params = self.interpreter.params
        return [
            params.agent.get("metadata"),
            params.task_info.get("metadata"),
            params.execution_info.get("metadata"),
        ]

    # Search ----------------------------------------------------------------------------------------------

    async def search(self, step: lang.SearchStep, names: dict[str, Any], position: Position) -> CallResult:
        """Search the docs of the task's agent (or `agent`) and of `user`, when given."""
        spec, values, params = step.search, self.interpreter.values, self.interpreter.params
        query = values.value(spec.query, names)
        if not isinstance(query, str) or not query.strip():
            raise StepFailed(f"search query must be non-empty text, got {query!r}")
        agent = values.value(spec.agent, names) if spec.agent is not None else params.agent.get("id")
        user = values.value(spec.user, names) if spec.user is not None else None
        owners = [str(o) for o in (agent, user) if o]
        request = SearchRequest(
            developer_id=params.developer_id,
            owner_ids=owners,
            mode=spec.mode,
            text=query,
            limit=spec.limit,
            metadata_filter=spec.metadata_filter or {},
            alpha=spec.alpha,
            mmr_strength=spec.mmr_strength,
            confidence=spec.confidence,
        )
        summary = f"{where(position, step.label)} · doc search ({spec.mode})"
        return await self._activity(SEARCH_DOCS, request, step, summary)

    # Prompts ---------------------------------------------------------------------------------------------

    async def prompt(
        self,
        step: lang.PromptStep,
        names: dict[str, Any],
        position: Position,
        metadata: dict[str, Any] | None,
    ) -> CallResult:
        """Ask the model; with `auto_run_tools`, run the tools it asks for and ask again until it answers.

        Each model call and each tool call is its own activity and its own transition, so a crash mid-loop
        resumes mid-loop. Function tools are answered by the client through a wait."""
        here = f"{position.workflow}[{position.step}]"
        request, tools, fixed = await self._prompt_request(step, names, here)
        summary = f"{where(position, step.label)} · model {request.model or 'by default'}"

        async def ask(messages: list[dict[str, Any]]) -> CallResult:
            request.messages, started = messages, workflow.now().isoformat()
            answer = await self._activity(CALL_MODEL, request, step, summary)
            return replace(answer, call={"model": answer.output.get("model"), "started_at": started})

        def record_model_turn(turn: int, answer: CallResult) -> None:
            turn_metadata = {**(metadata or {}), "turn": turn, "call": "model"}
            self.interpreter.log.add(
                "step", answer.output, position, position, metadata={**turn_metadata, **answer.metadata()}
            )

        def run_tool(call: dict[str, Any], turn: int) -> Awaitable[dict[str, Any]]:
            tool_metadata = {**(metadata or {}), "turn": turn, "call": "tool"}
            return self._loop_tool(call, tools, fixed, step, position, tool_metadata)

        max_turns = step.max_turns or prompts.MAX_TURNS
        loop = ToolLoop(
            ask=ask,
            message_of=lambda answer: answer.output["choices"][0]["message"],
            runs_here=lambda calls: bool(step.auto_run_tools),
            run_tool=run_tool,
            max_turns=max_turns,
            on_round=record_model_turn,
        )
        try:
            answer = (await loop.run(request.messages)).answer
        except MaxTurnsExceeded:
            raise TypedFailure(
                "MaxTurnsExceeded",
                f"{here}: the model still asked for tools after {max_turns} turns "
                "(raise the step's `max_turns` if the task needs more)",
            ) from None
        try:
            output = prompts.step_output(answer.output, step.unwrap, request.response_format)
        except ValueError:
            raise TypedFailure(
                "DecodeError", f"{here}: the model's answer is not the JSON that was asked for"
            ) from None
        return replace(answer, output=output)

    async def model_call(self, request: ModelRequest, summary: str) -> CallResult:
        """A model call that is no prompt step's (a guardrail's), with the task's defaults for the calls."""
        return await self._activity(CALL_MODEL, request, OTHER_CALL, summary)

    async def _prompt_request(
        self, step: lang.PromptStep, names: dict[str, Any], here: str
    ) -> tuple[ModelRequest, dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
        """The call_model request for a prompt step, the tools it offers, and their fixed arguments."""
        params, task = self.interpreter.params, self.interpreter.task
        settings = {
            **(params.agent.get("default_settings") or {}),
            **((task.defaults.settings if task.defaults else None) or {}),
            **(step.settings or {}),
        }
        response_format = settings.pop("response_format", None)
        model = settings.pop("model", None) or params.agent.get("model")
        tools = await self._described(self._prompt_tools(step, here), step, here)
        fixed = {name: prompts.fixed_arguments(tool, self._metadata_layers()) for name, tool in tools.items()}
        request = ModelRequest(
            model=model,
            messages=self._messages(step.prompt, names, here),
            settings=settings,
            tools=[prompts.offered_tool(tool, fixed[name]) for name, tool in tools.items()],
            tool_choice=step.tool_choice,
            response_format=response_format,
            at=f"{params.task_info.get('name', '')}:{here}",  # where recordings file it
            owner=self._owner(),
        )
        return request, tools, fixed

    async def _loop_tool(
        self,
        call: dict[str, Any],
        tools: dict[str, dict[str, Any]],
        fixed: dict[str, dict[str, Any]],
        step: lang.PromptStep,
        position: Position,
        metadata: dict[str, Any],
    ) -> dict[str, Any]:
        """Run one tool the model asked for; any failure becomes an error result the model reads, unless
        the tool says `on_error: fail`."""
        name = call["function"]["name"]
        started = workflow.time()
        tool = tools.get(name)
        data: Any = None
        error: dict[str, str] | None = None
        if tool is None:
            error = {"code": "unknown_tool", "message": f"there is no tool named {name!r}"}
        else:
            try:
                arguments = {
                    **prompts.call_arguments(call),
                    **fixed[name],
                }  # fixed values are not the model's
                outcome = await self._run_tool(tool, arguments, step, position, metadata, call_id=call["id"])
                data = outcome.output if isinstance(outcome, CallResult) else outcome
            except ValueError as exc:
                error = {"code": "invalid_arguments", "message": str(exc)}
            except (ActivityError, StepFailed) as exc:
                if tool.get("on_error") == "fail":
                    raise failed_tool(name, exc) from None
                error = {"code": tool_error_code(exc), "message": failure_message(exc)}
        status = "error" if error else "success"
        result = prompts.tool_result(status, started, workflow.time(), data, error)
        record = {
            "tool_call": {"id": call["id"], "name": name, "arguments": call["function"].get("arguments")}
        }
        self.interpreter.log.add(
            "step", {**record, "result": result}, position, position, metadata={**metadata, "tool": name}
        )
        return result

    async def _described(
        self, tools: dict[str, dict[str, Any]], step: lang.PromptStep, here: str
    ) -> dict[str, dict[str, Any]]:
        """MCP tools take their description and argument schema from their server (listed once per step)."""
        described = dict(tools)
        for name, tool in tools.items():
            integration = tool.get("integration") or {}
            if integration.get("provider") != "mcp" or integration.get("parameters"):
                continue
            timeout, retry = call_options(step, self.interpreter.task.defaults)
            with self.interpreter.view.doing(f"{here} · list the tools of MCP tool {name}") as summary:
                listed = await workflow.execute_activity(
                    LIST_MCP_TOOLS,
                    integration,
                    result_type=list[McpTool],
                    start_to_close_timeout=timeout,
                    retry_policy=retry,
                    heartbeat_timeout=HEARTBEAT_TIMEOUT,  # it heartbeats (activities/mcp.py)
                    summary=summary,
                    task_queue=self.interpreter.params.queues.get(LIST_MCP_TOOLS),
                )
            method = integration.get("method") or name
            found = next((t for t in listed if t.name == method), None)
            if found is None:
                raise StepFailed(f"MCP server of tool {name!r} has no tool {method!r}")
            described[name] = {
                **tool,
                "description": tool.get("description") or found.description,
                "parameters": found.parameters,
            }
        return described

    def _prompt_tools(self, step: lang.PromptStep, here: str) -> dict[str, dict[str, Any]]:
        """The tools a prompt step offers: `all` of the task's, or the ones it names."""
        tools = self.interpreter.tools
        if step.tools == "all":
            return dict(tools)
        chosen: dict[str, dict[str, Any]] = {}
        for ref in step.tools or []:
            name = ref if isinstance(ref, str) else ref.get("name") if isinstance(ref, dict) else None
            if not isinstance(name, str) or name not in tools:
                raise StepFailed(f"{here}: tool {name!r} is not defined for this task or its agent")
            chosen[name] = tools[name]
        return chosen

    def _messages(
        self, prompt: str | list[lang.Message], names: dict[str, Any], here: str
    ) -> list[dict[str, Any]]:
        """The prompt as chat messages: a string is one user message; each content is a template (or, with
        `$ `, an expression) over the step's names plus the agent and the task's tools."""
        scope = {**names, "tools": list(self.interpreter.tools.values())}
        if isinstance(prompt, str):
            return [{"role": "user", "content": self._content(prompt, scope, here)}]
        messages = []
        for message in prompt:
            rendered: dict[str, Any] = {
                "role": message.role,
                "content": self._content(message.content, scope, here),
            }
            if message.name:
                rendered["name"] = message.name
            messages.append(rendered)
        return messages

    def _content(self, content: Any, scope: dict[str, Any], here: str) -> Any:
        """A message's content rendered: text, or content parts whose text is rendered."""
        template = self.interpreter.values.template
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
        raise StepFailed(f"{here}: message content must be text or a list of content parts")
