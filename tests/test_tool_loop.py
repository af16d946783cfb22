"""The model-tool loop (workflows/tool_loop.py) on its own, with plain callables: what it asks, what it runs,
and when it stops. Prompt steps and chat run it for real in test_prompts.py and test_sessions.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from workflows.tool_loop import MaxTurnsExceeded, ToolLoop


def _answer(*calls: str) -> dict[str, Any]:
    """A model answer: text, or tool calls to the tools named."""
    tool_calls = [
        {"id": f"c{i}", "function": {"name": name, "arguments": "{}"}} for i, name in enumerate(calls)
    ]
    return {"content": None if calls else "done", "tool_calls": tool_calls or None}


class Script:
    """A model that gives these answers in order, and records what it was asked and what ran."""

    def __init__(self, *answers: dict[str, Any]):
        self.answers = list(answers)
        self.asked: list[list[dict[str, Any]]] = []
        self.ran: list[tuple[str, int]] = []
        self.rounds: list[int] = []

    async def ask(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        self.asked.append(messages)
        return self.answers.pop(0)

    async def run_tool(self, call: dict[str, Any], turn: int) -> dict[str, Any]:
        self.ran.append((call["function"]["name"], turn))
        return {"status": "success", "data": call["function"]["name"].upper()}

    def loop(self, max_turns: int = 10, runs_here: Any = lambda calls: True) -> ToolLoop[dict[str, Any]]:
        return ToolLoop(
            ask=self.ask,
            message_of=lambda answer: answer,
            runs_here=runs_here,
            run_tool=self.run_tool,
            max_turns=max_turns,
            on_round=lambda turn, answer: self.rounds.append(turn),
        )


async def test_tools_run_and_their_results_go_back_until_the_model_answers():
    script = Script(_answer("a", "b"), _answer("c"), _answer())
    end = await script.loop().run([{"role": "user", "content": "hi"}])
    assert end.answer["content"] == "done"
    assert script.ran == [("a", 1), ("b", 1), ("c", 2)]
    assert script.rounds == [1, 2]
    assert [m["role"] for m in end.exchange] == ["assistant", "tool", "tool", "assistant", "tool"]
    assert end.exchange[1] == {
        "role": "tool",
        "tool_call_id": "c0",
        "content": json.dumps({"status": "success", "data": "A"}),
    }
    # Each ask sees the conversation so far: the request's messages, then the exchange.
    assert [len(m) for m in script.asked] == [1, 4, 6]
    assert script.asked[2] == [{"role": "user", "content": "hi"}, *end.exchange]


async def test_calls_that_do_not_run_here_end_the_loop_with_them():
    script = Script(_answer("client_side"))
    end = await script.loop(runs_here=lambda calls: False).run([])
    assert end.answer["tool_calls"][0]["function"]["name"] == "client_side"
    assert end.exchange == [] and script.ran == [] and script.rounds == []


async def test_a_model_that_keeps_asking_for_tools_stops_after_max_turns():
    script = Script(_answer("a"), _answer("a"), _answer("a"))
    with pytest.raises(MaxTurnsExceeded) as raised:
        await script.loop(max_turns=2).run([])
    assert raised.value.max_turns == 2
    assert script.ran == [("a", 1), ("a", 2)]  # the third ask's calls do not run
