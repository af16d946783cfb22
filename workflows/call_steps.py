"""The steps that call out of the workflow: tool calls, prompts (with their tool-running loop) and doc search.

Each call is an activity with the step's timeout and retries; its CallResult's attempts, usage and cost go on
the step's transition; a `function` tool is answered by the client through the interpreter's wait. Shaping
a call (timeouts, retries, where it runs) is calls.py's business, a prompt's messages prompts.py's; CallSteps
(sharing one Interpreter's values and log) runs them."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError

from contracts.calls import CallAnswer, ModelAnswer, ModelRequest, Owner, SearchRequest
from contracts.json import JsonObject, JsonValue
from contracts.liveness import HEARTBEAT_TIMEOUT
from contracts.messages import Message, ToolCall
from contracts.temporal import CALL_MODEL, SEARCH_DOCS
from contracts.transitions import Position
from workflows import failures, live_text, prompts, references
from workflows import language as lang
from workflows.calls import (
    CALLS_IN_WORKER_PATCH,
    CallRequest,
    CallResult,
    ToolError,
    call_options,
    runs_in_worker,
    tool_activity,
)
from workflows.failures import StepFailed, TypedFailure, failed_tool, failure_message, tool_error_code
from workflows.handoff_steps import Holder, answered_by, hand_over, record_transfer
from workflows.mcp_listing import described
from workflows.step_runner import StepRunner
from workflows.tool_kinds import Tool, runs_on_client
from workflows.tool_loop import MaxTurnsExceeded, ToolLoop
from workflows.values import Names
from workflows.visibility import where
from workflows.worker_calls import WorkerCalls

# A call that belongs to no step (a guardrail's) takes the task's defaults for timeouts and retries.
OTHER_CALL = lang.CallStep()


class CallSteps:
    """Runs one interpreter's tool call, prompt and search steps."""

    def __init__(self, interpreter: StepRunner):
        self.interpreter = interpreter
        self.in_worker = WorkerCalls(interpreter.log)

    # Tool calls ------------------------------------------------------------------------------------------

    async def tool_call(
        self,
        step: lang.ToolCallStep,
        names: Names,
        position: Position,
        metadata: JsonObject | None,
    ) -> Any:
        """Call the step's tool with its arguments."""
        values = self.interpreter.values
        tool = self.interpreter.tools.get(step.tool_name)
        if tool is None:
            raise StepFailed(f"tool {step.tool_name!r} is not defined for this task or its agent")
        arguments = prompts.step_arguments(step, tool, names, values, self.interpreter.params)
        return await self._run_tool(tool, arguments, step, position, metadata)

    async def _run_tool(
        self,
        tool: Tool,
        arguments: Any,
        step: lang.CallStep,
        position: Position,
        metadata: JsonObject | None,
        call_id: str | None = None,
        owner: Owner | None = None,
    ) -> Any:
        """Call any kind of tool (as `owner`, by default the execution's agent); function tools (and Anthropic's
        built-in ones) are answered by the client through a wait."""
        params = self.interpreter.params
        if runs_on_client(tool):
            call: JsonObject = {"type": "function", "name": tool.name, "arguments": arguments}
            if call_id is not None:
                call["id"] = call_id
            return await self.interpreter.waits.wait(
                {"tool_call": call}, position, metadata, step.timeout, label=step.label
            )
        try:
            planned = tool_activity(
                tool,
                arguments,
                owner or self._owner(),
                self.interpreter.values,
                lambda: str(workflow.uuid4()),
                params.max_tool_timeout,
                self.interpreter.patched,
            )
        except ToolError as exc:
            raise StepFailed(str(exc)) from None
        summary = f"{where(position, step.label)} · tool {tool.name} ({tool.type})"
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
        try:
            if runs_in_worker(step, defaults, longest, queue) and self.interpreter.patched(
                CALLS_IN_WORKER_PATCH
            ):
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
        except ActivityError as exc:  # a timeout in the user's words: seconds and attempts
            if failures.was_cancelled(exc):
                raise asyncio.CancelledError from None
            error = failures.timed_out(exc, summary, timeout.total_seconds(), retry)
            raise error from error.cause
        if isinstance(answer, ModelAnswer):
            usage: object = answer.usage  # JSON from the provider, with whatever keys it gave
            return CallResult(
                answer.response, answer.attempt, usage if isinstance(usage, dict) else None, answer.cost
            )
        return CallResult(answer.response, answer.attempt)

    def _owner(self) -> Owner:
        """Whose calls this execution makes: its developer's, for its agent."""
        params = self.interpreter.params
        return Owner(params.developer_id, self.interpreter.agent.id, params.execution_id)

    # Search ----------------------------------------------------------------------------------------------

    async def search(self, step: lang.SearchStep, names: Names, position: Position) -> CallResult:
        """Search the docs of the task's agent (or `agent`) and of `user`, when given."""
        spec, values, params = step.search, self.interpreter.values, self.interpreter.params
        query = values.value(spec.query, names)
        if not isinstance(query, str) or not query.strip():
            raise StepFailed(f"search query must be non-empty text, got {query!r}")
        agent = values.value(spec.agent, names) if spec.agent is not None else self.interpreter.agent.id
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
        names: Names,
        position: Position,
        metadata: JsonObject | None,
    ) -> CallResult:
        """Ask the model; with `auto_run_tools`, run the tools it asks for and ask again until it answers.

        Each model call and each tool call is its own activity and its own transition, so a crash mid-loop
        resumes mid-loop. Function tools are answered by the client through a wait."""
        here = f"{position.workflow}[{position.step}]"
        request, tools, fixed, by_reference = await self._prompt_request(step, names, here)
        agent = self.interpreter.agent
        holder = Holder.start(
            self.interpreter.params, agent, tools, fixed, runs_tools=bool(step.auto_run_tools)
        )
        request.tools += holder.handoffs.offered()
        variables = self._variables(by_reference)  # pass by reference: None unless the settings ask for it

        def record_model_turn(turn: int, answer: CallResult) -> None:
            turn_metadata = {**(metadata or {}), "turn": turn, "call": "model"}
            self.interpreter.log.add(
                "step", answer.output, position, position, metadata={**turn_metadata, **answer.metadata()}
            )

        def run_tool(call: ToolCall, turn: int) -> Awaitable[JsonObject]:
            tool_metadata = {**(metadata or {}), "turn": turn, "call": "tool"}
            if holder.handoffs.is_transfer(call):
                return record_transfer(self.interpreter.log, holder, call, position, tool_metadata, here)
            owner = Owner(self.interpreter.params.developer_id, holder.agent.id)
            return self._loop_tool(
                call, holder.tools, holder.fixed, step, position, tool_metadata, owner, variables
            )

        max_turns = step.max_turns or prompts.MAX_TURNS
        loop = ToolLoop(
            ask=self._asker(request, holder, variables, step, position, names),
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
        if holder.moved:  # whichever agent answers, its guardrails apply: the target's on its answer
            message = answer.output["choices"][0]["message"]
            await self.interpreter.guards.run_handed("output", holder.agent, [message], names, position)
        output = prompts.step_output(answer.output, step.unwrap, request.response_format, here)
        return replace(answer, output=output, agent_id=answered_by(holder, output))

    def _asker(
        self,
        request: ModelRequest,
        holder: Holder,
        variables: references.Variables | None,
        step: lang.PromptStep,
        position: Position,
        names: Names,
    ) -> Callable[[list[Message]], Awaitable[CallResult]]:
        """A prompt step's model call, each round of its tool loop: after a transfer, the target's request
        (once its input guardrails pass what it is handed); with variables, the by-reference tools some
        variable fits."""
        here = f"{position.workflow}[{position.step}]"
        offered = request.tools

        async def ask(messages: list[Message]) -> CallResult:
            nonlocal offered
            if holder.pending is not None:  # a transfer: the target takes over from this call
                await hand_over(self.interpreter, holder, request, step, here)
                offered = request.tools
                handed = [m for m in messages if m.get("role") != "system"]
                await self.interpreter.guards.run_handed("input", holder.agent, handed, names, position)
            request.messages, started = holder.conversation(messages), workflow.now().isoformat()
            if variables is not None:
                request.tools = variables.offer(offered)
            summary = f"{where(position, step.label)} · model {request.model or 'by default'}"
            answer = await self._activity(CALL_MODEL, request, step, summary)
            return replace(answer, call={"model": answer.output.get("model"), "started_at": started})

        return ask

    async def model_call(self, request: ModelRequest, summary: str) -> CallResult:
        """A model call that is no prompt step's (a guardrail's), with the task's defaults for the calls."""
        return await self._activity(CALL_MODEL, request, OTHER_CALL, summary)

    async def _prompt_request(
        self, step: lang.PromptStep, names: Names, here: str
    ) -> tuple[ModelRequest, dict[str, Tool], dict[str, JsonObject], references.ReferenceSettings]:
        """The call_model request for a prompt step, the tools it offers, their fixed arguments, and
        whether values pass by reference (settings of Mint's, not sent to the model)."""
        params, task, agent = self.interpreter.params, self.interpreter.task, self.interpreter.agent
        by_reference, settings = references.split_settings(
            {
                **(agent.default_settings or {}),
                **((task.defaults.settings if task.defaults else None) or {}),
                **(step.settings or {}),
            }
        )
        response_format = settings.pop("response_format", None)
        model = settings.pop("model", None) or agent.model
        tools = await described(self.interpreter, self._prompt_tools(step, here), step, here)
        layers = prompts.metadata_layers(self.interpreter.params)  # where `x-tool-parameters` come from
        fixed = {name: prompts.fixed_arguments(tool, layers) for name, tool in tools.items()}
        request = ModelRequest(
            model=model if isinstance(model, str) else None,
            messages=self._messages(step.prompt, names, here),
            settings=settings,
            tools=[prompts.offered_tool(tool, fixed[name]) for name, tool in tools.items()],
            tool_choice=step.tool_choice,
            response_format=response_format if isinstance(response_format, dict) else None,
            at=f"{params.task_info.get('name', '')}:{here}",  # where recordings file it
            owner=self._owner(),
            stream_as=live_text.stream_name(settings, step.label, here, self.interpreter),
        )
        return request, tools, fixed, by_reference

    def _variables(self, settings: references.ReferenceSettings) -> references.Variables | None:
        """A prompt step's variables, starting with the task's state, when its settings pass by reference
        (an execution that started before the feature existed replays without it)."""
        if not settings.enabled or not self.interpreter.patched(references.REFERENCES_PATCH):
            return None
        bounded = self.interpreter.patched(
            references.BOUNDED_PATCH
        )  # a run from before the bound replays unbounded
        budget = self.interpreter.values.budget  # the step's: filling references in is charged to it
        return references.Variables.start(settings, self.interpreter.state, budget, bounded)

    async def _loop_tool(
        self,
        call: ToolCall,
        tools: dict[str, Tool],
        fixed: dict[str, JsonObject],
        step: lang.PromptStep,
        position: Position,
        metadata: JsonObject,
        owner: Owner | None = None,
        variables: references.Variables | None = None,
    ) -> JsonObject:
        """Run one tool the model asked for; any failure becomes an error result the model reads, unless
        the tool says `on_error: fail`. With `variables`, references in the arguments get their values, and
        a large result becomes a variable the model reads a preview of."""
        name = call["function"]["name"]
        started = workflow.time()
        tool = tools.get(name)
        data: JsonValue = None
        error: JsonObject | None = None
        if tool is None:
            error = {"code": "unknown_tool", "message": f"there is no tool named {name!r}"}
        else:
            try:
                arguments = prompts.call_arguments(call)
                if variables is not None:
                    arguments = variables.resolve(tool.schema, arguments)
                arguments = {**arguments, **fixed[name]}  # fixed values are not the model's
                outcome = await self._run_tool(
                    tool, arguments, step, position, metadata, call_id=call["id"], owner=owner
                )
                data = outcome.output if isinstance(outcome, CallResult) else outcome
            except references.BadReference as exc:
                error = references.error_result(exc)
            except references.ReferencesTooLarge as exc:  # a value limit, not the model's to read
                raise failures.limit_failure(f"{where(position, step.label)}: tool {name!r}", exc) from None
            except ValueError as exc:
                error = {"code": "invalid_arguments", "message": str(exc)}
            except (ActivityError, StepFailed) as exc:
                if tool.fails_step:
                    raise failed_tool(name, exc) from None
                error = {"code": tool_error_code(exc), "message": failure_message(exc)}
        status = "error" if error else "success"
        result = prompts.tool_result(status, started, workflow.time(), data, error)
        shown, variable = variables.keep(name, result) if variables is not None else (result, None)
        record: JsonObject = {
            "tool_call": {"id": call["id"], "name": name, "arguments": call["function"].get("arguments")},
            "result": result,  # in full; with `variable`, the model read a preview naming it
        }
        if variable:
            record["variable"] = variable
        self.interpreter.log.add("step", record, position, position, metadata={**metadata, "tool": name})
        return shown

    def _prompt_tools(self, step: lang.PromptStep, here: str) -> dict[str, Tool]:
        """The tools a prompt step offers: `all` of the task's, or the ones it names."""
        tools = self.interpreter.tools
        if step.tools == "all":
            return dict(tools)
        chosen: dict[str, Tool] = {}
        for ref in step.tools or []:
            name = ref if isinstance(ref, str) else ref.get("name") if isinstance(ref, dict) else None
            if not isinstance(name, str) or name not in tools:
                raise StepFailed(f"{here}: tool {name!r} is not defined for this task or its agent")
            chosen[name] = tools[name]
        return chosen

    def _messages(self, prompt: str | list[lang.Message], names: Names, here: str) -> list[Message]:
        """The prompt as chat messages, over the step's names plus the task's tools (as stored)."""
        stored = {tool["name"]: tool for tool in self.interpreter.params.tools}
        scope = {**names, "tools": list(stored.values())}
        try:
            return prompts.render_messages(prompt, scope, self.interpreter.values.template)
        except prompts.BadContent as exc:
            raise StepFailed(f"{here}: {exc}") from None
