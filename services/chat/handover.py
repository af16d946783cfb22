"""Who holds one agent's turn of a chat, for handoffs (workflows/handoffs.py): the agent with `handoffs` is
offered a `transfer_to_<name>` tool per target; when the model calls one, the target takes the turn over from
the next model call, with its own system message (the session's template rendered for it), model and tools.
A transfer outside the agent's list is a HandoffError, which answers the chat with a 400."""

from __future__ import annotations

import time
from dataclasses import dataclass

from contracts.json import JsonObject
from contracts.messages import Message, ToolCall
from contracts.records.agents import Agent as StoredAgent
from services.chat.cast import Cast, acting
from services.errors import Refused
from workflows import prompts
from workflows.agents import Agent
from workflows.handoffs import HandoffRefused, Handoffs, transfer_data


@dataclass
class Holder:
    """The agent holding the turn (its cast), the context it was given (system, history, the new messages),
    its handoffs (and their targets as stored, by id), and the transfer waiting for the next model call.
    `base` is how many messages the turn's first context had: what the loop adds after them (tool exchanges)
    carries over a handoff."""

    cast: Cast
    context: list[Message]
    handoffs: Handoffs
    targets: dict[str, StoredAgent]
    base: int
    pending: Agent | None = None

    @classmethod
    def start(cls, cast: Cast, context: list[Message], targets: list[StoredAgent]) -> Holder:
        handoffs = Handoffs.of(cast.agent, [acting(t) for t in targets], set(cast.tools))
        return cls(cast, context, handoffs, {t.id: t for t in targets}, len(context))

    def taking_over(self) -> StoredAgent | None:
        """The agent the pending transfer names, as stored (None: no transfer is pending)."""
        return None if self.pending is None else self.targets[str(self.pending.id)]

    def offered_tools(self) -> list[JsonObject]:
        """The agent's tools, then its transfer tools."""
        return [*self.cast.offered_tools(), *self.handoffs.offered()]

    def runs_here(self, call: ToolCall, auto_run: bool) -> bool:
        """A transfer always runs here (only Mint can hand over); other tools as the session says."""
        return self.handoffs.is_transfer(call) or (auto_run and self.cast.runs_here(call))

    async def transfer(self, call: ToolCall) -> JsonObject:
        """Take a transfer call: the target holds the turn from the next model call (the first transfer of a
        round wins). What the model reads says so."""
        try:
            target = self.handoffs.target(call)
        except HandoffRefused as exc:
            raise Refused(str(exc), error_type="HandoffError") from None
        if self.pending is None:
            self.pending = target
        now = time.monotonic()
        return prompts.tool_result("success", now, now, transfer_data(self.cast.agent, self.pending))

    def hand_over(self, cast: Cast, context: list[Message], targets: list[StoredAgent]) -> None:
        """The pending agent holds the turn now, with its cast and the context built for it."""
        self.cast, self.context, self.pending = cast, context, None
        self.handoffs = Handoffs.of(cast.agent, [acting(t) for t in targets], set(cast.tools))
        self.targets = {t.id: t for t in targets}

    def conversation(self, messages: list[Message]) -> list[Message]:
        """What the model reads: the holding agent's context, then what the loop added since the turn began."""
        return [*self.context, *messages[self.base :]]
