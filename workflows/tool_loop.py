"""The model-tool loop, written once for prompt steps (workflows/call_steps.py) and chat (services/chat/):
ask the model; while it asks for tools that run here, run them (concurrently), add their results to the
conversation and ask again, for at most `max_turns` rounds of tools.

Pure: the loop only awaits the callables it is given, so it runs inside Temporal's workflow sandbox. In a
workflow they execute activities, and the loop's commands are exactly those activities, in the order it
awaits them (checked-in histories replay against that order: tests/test_replay.py); in chat they call the
model client and run tools from the API process.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from contracts.json import JsonValue
from contracts.messages import Message, ToolCall
from workflows.fan_out import gather

Answer = TypeVar("Answer")


class MaxTurnsExceeded(Exception):
    """The model still asked for tools after `max_turns` rounds of them; each caller words it its way."""

    def __init__(self, max_turns: int):
        self.max_turns = max_turns
        super().__init__(f"the model still asked for tools after {max_turns} turns")


@dataclass
class LoopEnd(Generic[Answer]):
    """How a loop ended: the model's last answer (the one that asked for no tools to run here) and the
    messages the loop added to the conversation, each round's assistant message then its tool results."""

    answer: Answer
    exchange: list[Message]


def _nothing(turn: int, answer: object) -> None:
    return None


@dataclass
class ToolLoop(Generic[Answer]):
    """The callables that differ between a workflow's prompt step and a chat. `Answer` is whatever `ask`
    returns (a workflow's CallResult, a chat's model response); `message_of` finds its assistant message."""

    ask: Callable[[list[Message]], Awaitable[Answer]]  # one model call over the conversation so far
    message_of: Callable[[Answer], Message]
    # Whether to run these tool calls and ask again; if not, the answer (calls and all) is the last one.
    runs_here: Callable[[list[ToolCall]], bool]
    run_tool: Callable[
        [ToolCall, int], Awaitable[JsonValue]
    ]  # one call in round `turn` (from 1): what the model reads
    max_turns: int
    # Called before a round's tools run, with the answer that asked for them (a workflow records it).
    on_round: Callable[[int, Answer], None] = field(default=_nothing)

    async def run(self, messages: list[Message]) -> LoopEnd[Answer]:
        """Ask until the model answers without tools to run here; MaxTurnsExceeded past `max_turns` rounds."""
        exchange: list[Message] = []
        turn = 0
        while True:
            answer = await self.ask([*messages, *exchange])
            message = self.message_of(answer)
            calls = message.get("tool_calls") or []
            if not calls or not self.runs_here(calls):
                return LoopEnd(answer, exchange)
            turn += 1
            if turn > self.max_turns:
                raise MaxTurnsExceeded(self.max_turns)
            self.on_round(turn, answer)
            exchange.append({"role": "assistant", "content": message.get("content"), "tool_calls": calls})
            # Started in the calls' order (a workflow schedules their activities in that order); the first
            # failure cancels the rest.
            results = await gather([self.run_tool(call, turn) for call in calls])
            exchange += [
                {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)}
                for call, result in zip(calls, results, strict=True)
            ]
