"""A chat: each agent of the session answers in turn (or just the one named), running the server-side tools
it asks for, and the exchange goes into the session's history.

One chat at a time per session (infra/store/chat_turns.py), at most so many per developer
(services/chat/slots.py). The model-tool loop is the one prompt steps run (workflows/tool_loop.py); here its
model calls and tool runs are ChatCalls' (services/chat/calls.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import threading
from collections.abc import AsyncIterator, Awaitable, Callable

from temporalio.client import Client

from contracts.calls import ModelAnswer
from contracts.json import JsonObject, JsonValue
from contracts.messages import Message, ToolCall
from contracts.records.agents import Agent as StoredAgent
from infra.models.client import KeyAhead, ModelClient
from infra.models.embeddings import Embedders
from infra.models.tokens import count_tokens
from infra.store.budgets import Budgets
from infra.store.chat_turns import ChatTurns, SessionBusy
from infra.store.docs import DocStore
from infra.store.session_history import SessionHistory
from infra.store.tables import AGENTS, Store
from services.chat.ahead import ReadsAhead
from services.chat.assemble import ContextAssembler
from services.chat.calls import ChatCalls
from services.chat.cast import Cast, acting, cast
from services.chat.compressing import Compressor
from services.chat.context import Context, NeedsCompression
from services.chat.guardrails import ChatGuardrails, TextGate
from services.chat.handover import Holder
from services.chat.reply import ChatAnswer, Reply
from services.chat.request import Chat, ChatMessage
from services.chat.session import ChatSession
from services.chat.slots import ChatSlots
from services.chat.spending import ChatSpending
from services.errors import Busy, Invalid, ModelFailed, NotFound, TooLarge
from services.handoffs import handoff_targets, reaches_output_guardrails
from services.sessions import owned
from workflows import prompts, references
from workflows.storable import find_unstorable, format_path
from workflows.tool_loop import MaxTurnsExceeded, ToolLoop

# Chats in one session are serialised: a second waits up to this long for the first, then is refused (Busy).
CHAT_TURN_WAIT_SECONDS = 30.0
# Adaptive sessions compress once the context passes this share of the budget (MINT_ADAPTIVE_CONTEXT_START).
ADAPTIVE_START = 0.5

OnChoiceText = Callable[[int, str], Awaitable[None]]


def _message(answer: ModelAnswer) -> Message:
    """The assistant message of a model answer (its first choice's)."""
    return answer.response["choices"][0]["message"]


def _fill_fixed(answer: ModelAnswer, cast: Cast) -> None:
    """The arguments x-tool-parameters fixes, put into the answer's tool calls: whoever runs a call (Mint or
    the client) gets them."""
    for call in _message(answer).get("tool_calls") or []:
        fixed = cast.fixed.get(call["function"]["name"], {})
        call["function"]["arguments"] = json.dumps({**prompts.call_arguments(call), **fixed})


class Chatter:
    """What a chat needs: the store, the docs for recall, the embedders, the model client and Temporal."""

    def __init__(
        self,
        store: Store,
        docs: DocStore,
        embedders: Embedders,
        models: ModelClient,
        temporal: Client,
        task_queue: str,
        slots: ChatSlots,
        max_tool_timeout: float | None = None,
        adaptive_start: float = ADAPTIVE_START,
    ):
        self.store = store
        self.slots = slots
        self.turns = ChatTurns(store.pool)
        self.budgets = Budgets(store.pool)
        self.history = SessionHistory(store.pool)
        default_model = models.config.default_model if models is not None else None
        self.assembler = ContextAssembler(self.history, docs, embedders, default_model)
        self.calls = ChatCalls(models, temporal, task_queue, max_tool_timeout)
        self.guardrails = ChatGuardrails(models)
        self.compressor = Compressor(temporal, task_queue, adaptive_start)
        # The tokenizer loads (0.4 s of CPU) beside the API's start, not in front of its first chat's answer.
        threading.Thread(target=count_tokens, args=(Message(role="system"),), daemon=True).start()

    async def cast(self, developer: str, session: ChatSession, agent: StoredAgent, body: Chat) -> Cast:
        """Who takes part in one agent's turn and with which tools."""
        return await cast(self.store, developer, session, agent, body)

    async def prepare(
        self, developer: str, session: ChatSession, body: Chat, cast: Cast
    ) -> tuple[Context, list[JsonObject]]:
        """The context one agent's turn sends, and the docs recalled (also what `/render` shows). An
        `adaptive` session's context over budget waits for its history to be compressed (never sent with a
        message left out that no summary covers); if it still does not fit, the chat is refused."""
        try:
            return await self.assembler.assemble(developer, session, body, cast)
        except NeedsCompression as over:
            await self.compressor.now(developer, session.id, over)
        try:
            return await self.assembler.assemble(developer, session, body, cast)
        except NeedsCompression as over:
            raise TooLarge(
                f"the context is {over.tokens} tokens, over its budget of {over.budget} (the session's "
                f"token_budget, or its model's context window), even with its history compressed (the system "
                f"message and the new messages are {over.fixed}); raise the budget, send less, or clear the "
                "history"
            ) from None

    async def chat(
        self,
        developer: str,
        session: ChatSession,
        body: Chat,
        on_text: OnChoiceText | None = None,
        reply: Reply | None = None,
    ) -> ChatAnswer:
        """Each agent of the session answers in turn (or just the one named), each seeing the answers before.
        With `on_text`, models stream, and each piece of text goes to `on_text(choice index, text)`; when an
        agent that may answer has output guardrails, its answer goes there whole, once they let it pass. A
        `reply` given (empty) is the answer's, its id and time known to the caller first."""
        agent_ids = [body.agent] if body.agent else list(session.agents)
        if body.agent and body.agent not in session.agents:
            raise Invalid(f"agent {body.agent} is not part of session {session.id}")
        reads = ReadsAhead(
            agent_ids,
            functools.partial(self._agent, developer),
            lambda agent: self.cast(developer, session, agent, body),
            # The developer's default budget applies to a session that sets none.
            None if session.has_budget else self.budgets.default_budget(developer),
        )
        try:
            async with self._turn(developer, session.id):
                reply = reply or Reply()
                await self._turn_of(developer, session, body, agent_ids, reads, reply, on_text)
        finally:
            await reads.close()
        return reply.response()

    async def _turn_of(
        self,
        developer: str,
        session: ChatSession,
        body: Chat,
        agent_ids: list[str],
        reads: ReadsAhead,
        reply: Reply,
        on_text: OnChoiceText | None,
    ) -> None:
        """The chat inside the session's turn: the input checked, each agent's answer, the exchange saved
        (beside the last call's usage being written)."""
        spending = ChatSpending(self.budgets, session.id, await reads.default_budget(), reply.count)
        try:
            await self._check_input(developer, session, body, agent_ids, reads, spending)
            named = len(agent_ids) > 1
            for agent_id in agent_ids:
                await self._answer(developer, session, body, agent_id, reads, reply, spending, on_text, named)
            asked = [m.message() for m in body.messages]
            saved = self._save(developer, session.id, asked, reply.answered) if body.save else None
            await asyncio.gather(spending.settled(), *([saved] if saved else []))
        finally:
            await spending.close()

    async def _answer(
        self,
        developer: str,
        session: ChatSession,
        body: Chat,
        agent_id: str,
        reads: ReadsAhead,
        reply: Reply,
        spending: ChatSpending,
        on_text: OnChoiceText | None,
        named: bool,
    ) -> None:
        """One agent's answer, reading the answers before it; what it adds goes on `reply`."""
        agent = await reads.agent(agent_id)
        turn = body.model_copy(
            update={"messages": [*body.messages, *map(ChatMessage.model_validate, reply.answered)]}
        )
        cast = await reads.cast(agent_id)
        spending.reserve_ahead()  # the model call comes next: counted while its context is read
        key_ahead = self.calls.key_ahead(body, developer, cast.agent)  # and its provider key read
        context, docs = await self.prepare(developer, session, turn, cast)
        await self.compressor.maybe_start(developer, session, context)
        reply.recall(docs)
        gate: TextGate | None = None
        if on_text is not None:  # streamed: live, unless an agent that may answer has output guardrails
            held = await reaches_output_guardrails(self.store, developer, agent)
            gate = TextGate(functools.partial(on_text, len(reply.choices)), held)
        holder = Holder.start(cast, context.messages, await handoff_targets(self.store, developer, agent))
        loop = self._tool_loop(developer, session, body, holder, reply, spending, gate, turn, key_ahead)
        try:
            end = await loop.run(context.messages)
        except MaxTurnsExceeded as exc:
            raise Invalid(
                f"the model still asked for tools after {exc.max_turns} turns", error_type="MaxTurnsExceeded"
            ) from None
        # After a handoff the answer is the answering agent's (the one holding the turn at the end), so its
        # output guardrails apply, not those of the agent the session or request named.
        answering = holder.cast.agent
        await self.guardrails.check_output(developer, session.id, answering, _message(end.answer), spending)
        if gate is not None:
            await gate.passed(_message(end.answer))
        reply.add(end, answering, named)

    async def _check_input(
        self,
        developer: str,
        session: ChatSession,
        body: Chat,
        agent_ids: list[str],
        reads: ReadsAhead,
        spending: ChatSpending,
    ) -> None:
        """Every answering agent's input guardrails on the request's messages, before any model is asked."""
        asked = [m.message() for m in body.messages]
        for agent_id in agent_ids:
            agent = await reads.agent(agent_id)
            await self.guardrails.check_input(developer, session.id, acting(agent), asked, spending)

    async def _agent(self, developer: str, agent_id: str) -> StoredAgent:
        agent = await owned(self.store, AGENTS, developer, agent_id)
        if agent is None:
            raise NotFound("agent", agent_id)
        return agent

    def _tool_loop(
        self,
        developer: str,
        session: ChatSession,
        body: Chat,
        holder: Holder,
        reply: Reply,
        spending: ChatSpending,
        gate: TextGate | None,
        turn_body: Chat,
        key_ahead: KeyAhead | None = None,
    ) -> ToolLoop[ModelAnswer]:
        """The model-tool loop of one agent's turn: tools run here only when the session (or request) says
        `auto_run_tools` and every call asks for a server-side tool (or a handoff); others go back to the
        client. After a handoff, `holder` names the agent that answers. With `gate` (a streamed chat), the
        models stream, and their text goes through it. `key_ahead`: the provider key of the agent that answers
        first, being read for the first call."""
        auto_run = session.auto_run_tools if body.auto_run_tools is None else body.auto_run_tools
        by_reference, _ = references.split_settings(session.settings or {})
        # Pass by reference: the variables last for this agent's turn (its tool loop, handoffs included).
        variables = references.Variables.start(by_reference) if by_reference.enabled else None

        async def ask(messages: list[Message]) -> ModelAnswer:
            if holder.pending is not None:
                await self._hand_over(developer, session, body, turn_body, holder, reply, messages, spending)
                if gate is not None and not gate.held:  # the new holder, or its own targets, may be guarded
                    gate.held = await reaches_output_guardrails(self.store, developer, holder.cast.stored)
            cast, tools = holder.cast, holder.offered_tools()
            # With variables, a by-reference tool is offered once one fits it.
            offered = variables.offer(tools) if variables is not None else tools
            conversation = holder.conversation(messages)
            await spending.before_call()
            piece = gate.piece if gate else None
            nonlocal key_ahead  # the first call's: a later one reads the key again, as it may have changed
            ahead, key_ahead = key_ahead, None
            answer = await self.calls.complete(
                body, developer, cast.agent, conversation, offered, piece, reply.unsupported, ahead
            )
            await spending.after_call(answer)  # counts it in the answer's usage too
            _fill_fixed(answer, cast)
            return answer

        def run_tool(call: ToolCall, turn: int) -> Awaitable[JsonValue]:
            if holder.handoffs.is_transfer(call):
                return holder.transfer(call)
            return self.calls.run_tool(developer, holder.cast, call, variables)

        return ToolLoop(
            ask=ask,
            message_of=_message,
            runs_here=lambda calls: all(holder.runs_here(c, bool(auto_run)) for c in calls),
            run_tool=run_tool,
            max_turns=prompts.MAX_TURNS,
        )

    async def _hand_over(
        self,
        developer: str,
        session: ChatSession,
        body: Chat,
        turn_body: Chat,
        holder: Holder,
        reply: Reply,
        messages: list[Message],
        spending: ChatSpending,
    ) -> None:
        """The agent a transfer named takes the turn: its cast, and the context (system message, history,
        recalled docs) the session gives it, as if it had been asked. Its input guardrails check what it is
        handed first (the request's messages and the answers before this turn's, then the turn's exchange)."""
        agent = holder.taking_over()
        assert agent is not None
        asked = [m.message() for m in turn_body.messages]
        handed = [*asked, *messages[holder.base :]]
        await self.guardrails.check_input(developer, session.id, acting(agent), handed, spending)
        cast = await self.cast(developer, session, agent, body)
        context, docs = await self.prepare(developer, session, turn_body, cast)
        reply.recall(docs)
        holder.hand_over(cast, context.messages, await handoff_targets(self.store, developer, agent))

    @contextlib.asynccontextmanager
    async def _turn(self, developer: str, session_id: str) -> AsyncIterator[None]:
        """A chat slot of the developer's, then the session's turn (one chat at a time per session, so
        history never interleaves half-turns)."""
        with self.slots.slot(developer):
            try:
                async with self.turns.turn(developer, session_id, CHAT_TURN_WAIT_SECONDS):
                    yield
            except SessionBusy:
                raise Busy(f"session {session_id} is busy with another chat; try again") from None

    async def _save(
        self, developer: str, session_id: str, asked: list[Message], answered: list[Message]
    ) -> None:
        # The request was checked on its way in (api/request_check.py); the answers come from a model or a
        # tool, and text Postgres cannot store there is their fault, not the caller's.
        for problem in find_unstorable(answered, limit=None, most=1):
            raise ModelFailed(
                f"the answer cannot be saved to the history: at {format_path(problem.loc)} it {problem.message}"
            )
        entries = [(m, "api_request") for m in asked] + [(m, "api_response") for m in answered]
        await self.history.append(
            developer, session_id, [(m, source, count_tokens(m)) for m, source in entries]
        )
