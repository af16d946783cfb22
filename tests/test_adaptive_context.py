"""Adaptive context (seeds 000 and 003): long conversations over the scripted model, checked at every
turn on what the model was actually sent: within the budget, covering every message of the history (verbatim,
or by a summarizer entry that replaces it, transitively), and valid for the provider."""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from typing import Any

import httpx
import pytest

from infra.models.catalog import CONTEXT_WINDOWS
from services.chat.context import count_tokens, token_budget
from services.chat.session import ChatSession
from tests.model_server import Call, Reply

ENTITIES, SUMMARY, TRIM = (
    "You extract the key entities",
    "You summarise conversations",
    "You shorten one message",
)
COMPRESSING = (ENTITIES, SUMMARY, TRIM)
# A 1x1 PNG.
PNG = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5"
    "ErkJggg=="
)


def _system(call: Call) -> str:
    first = call.messages[0] if call.messages else {}
    return first.get("content") or "" if first.get("role") == "system" else ""


def _is_compression(call: Call) -> bool:
    return _system(call).startswith(COMPRESSING)


def _text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if p.get("type") == "text")
    return content or ""


def _images(content: Any) -> list[dict[str, Any]]:
    return [p for p in content if p.get("type") == "image_url"] if isinstance(content, list) else []


class Model:
    """The scripted model: the compression techniques keep each message's tag (`T12`); the chat answers
    `noted T12`, or calls the `note` tool when asked to CALL; it records the images each technique saw."""

    def __init__(self, slow: float = 0.0) -> None:
        self.images_seen: dict[str, int] = {ENTITIES: 0, SUMMARY: 0, TRIM: 0}
        self.slow = slow  # seconds each compression call takes: chats outrun the background

    def __call__(self, call: Call) -> Reply | str:
        system = _system(call)
        for technique in COMPRESSING:
            if system.startswith(technique):
                content = call.messages[-1]["content"]
                self.images_seen[technique] += len(_images(content))
                time.sleep(self.slow)
                return self.compress(technique, _text(content), bool(_images(content)))
        last = call.messages[-1]
        if last["role"] == "user" and "CALL" in _text(last["content"]):
            return Reply(tool_calls=[("note", {"what": _tag(_text(last["content"]))})])
        return f"noted {_tag(_text(last['content']))} " + "and more " * (3 if last["role"] == "user" else 1)

    def compress(self, technique: str, text: str, image: bool) -> str:
        tags = " ".join(dict.fromkeys(re.findall(r"\bT\d+\b", text)))
        seen = " (an image of one red dot)" if image else ""
        if technique == ENTITIES:
            return f"Ada, Lisbon{seen}"
        if technique == SUMMARY:
            return f"talked about {tags}{seen}"
        return f"{tags} shortened{seen}"


def _tag(text: str) -> str:
    found = re.search(r"\bT\d+\b", text)
    return found.group(0) if found else "?"


def _norm(content: Any) -> Any:
    """Content as compared between the history and the wire: text-only part lists read as one string (as the
    model server shows them), images by their URL."""
    if isinstance(content, list):
        if all(p.get("type") == "text" for p in content):
            return _text(content)
        return tuple((p["type"], p.get("text") or p.get("image_url", {}).get("url")) for p in content)
    return content


async def _entries(api: httpx.AsyncClient, session_id: str) -> list[dict[str, Any]]:
    response = await api.get(f"/sessions/{session_id}/history")
    assert response.status_code == 200, response.text
    return response.json()["entries"]


async def check_context(
    api: httpx.AsyncClient, session_id: str, sent: list[dict[str, Any]], budget: int
) -> None:
    """What one chat sent fits the budget, covers every message the history had, and is valid for the provider."""
    assert sum(count_tokens(m) for m in sent) <= budget, [count_tokens(m) for m in sent]
    roles = [m["role"] for m in sent]
    first = next(i for i, r in enumerate(roles) if r != "system")
    assert roles[first] == "user", roles  # the conversation opens with a user message
    assert "system" not in roles[first:], [(m["role"], _text(m["content"])[:30]) for m in sent]
    called: set[str] = set()
    for message in sent:
        if message["role"] == "tool":
            assert message["tool_call_id"] in called, roles  # never a tool message without its call
        called.update(c["id"] for c in message.get("tool_calls") or [])
    entries = await _entries(api, session_id)
    in_context = {(m["role"], json.dumps(_norm(m["content"]))) for m in sent}
    replaced_by: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:
        for replaced in entry["replaces"]:
            replaced_by.setdefault(replaced, []).append(entry)

    def covered(entry: dict[str, Any]) -> bool:
        if (entry["role"], json.dumps(_norm(entry["content"]))) in in_context:
            return True
        return any(covered(by) for by in replaced_by.get(entry["id"], []))

    messages = [e for e in entries if e["source"] != "summarizer"][:-1]  # all but the answer to this chat
    lost = [(e["role"], _text(e["content"])[:40]) for e in messages if not covered(e)]
    assert not lost, f"the context lost messages no summary covers: {lost}"


async def _session(api: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    response = await api.post("/sessions", json=body)
    assert response.status_code == 201, response.text
    return response.json()


@pytest.fixture
async def agent(mapi) -> dict[str, Any]:
    agent = (await mapi.post("/agents", json={"name": "Ada", "model": "gpt-4o-mini"})).json()
    tool = {"name": "note", "type": "function", "function": {"parameters": {"type": "object"}}}
    assert (await mapi.post(f"/agents/{agent['id']}/tools", json=tool)).status_code == 201
    return agent


def _chat_calls(model_server: Any) -> list[Call]:
    return [c for c in model_server.calls if not _is_compression(c)]


async def converse(
    api: httpx.AsyncClient, model_server: Any, session_id: str, budget: int, turns: list[Any]
) -> None:
    """Each turn (a text, or a content list) as a user message, checked; a model's tool call is answered with
    a tool message in the next chat, checked too."""
    for number, content in enumerate(turns):
        messages = [{"role": "user", "content": content}]
        while messages:
            before = len(_chat_calls(model_server))
            answer = await api.post(f"/sessions/{session_id}/chat", json={"messages": messages})
            assert answer.status_code == 201, answer.text
            chats = _chat_calls(model_server)
            assert len(chats) == before + 1
            await check_context(api, session_id, chats[-1].messages, budget)
            calls = answer.json()["choices"][0]["message"].get("tool_calls") or []
            messages = [
                {"role": "tool", "tool_call_id": c["id"], "content": f"noted for T{number}x"} for c in calls
            ]


def _filler(number: int) -> str:
    text = f"T{number}: " + "lorem ipsum dolor sit amet " * (4 + number % 5)
    if number % 9 == 4:
        text += "padding and repetition " * 60  # long: trimmed while it is among the newest
    if number % 7 == 3:
        text += " CALL the note tool"
    return text


async def test_a_long_conversation_fits_covers_everything_and_stays_valid_at_every_turn(
    mapi, script, model_server, agent
):
    script.reply = model = Model(slow=0.3)
    budget = 600  # tight: the background cannot always keep up, so chats must wait for compression
    session = await _session(
        mapi, agent=agent["id"], token_budget=budget, context_overflow="adaptive", system_template="Be short."
    )
    await converse(mapi, model_server, session["id"], budget, [_filler(n) for n in range(45)])
    entries = await _entries(mapi, session["id"])
    by_id = {e["id"]: e for e in entries}
    made = [e for e in entries if e["source"] == "summarizer"]
    entities = [e for e in made if e["content"].startswith("Key entities: ")]
    summaries = [e for e in made if e["content"].startswith("Summary of earlier messages: ")]
    trimmed = [e for e in made if e["role"] in ("user", "assistant")]
    assert entities and summaries and trimmed, [e["content"][:30] for e in made]
    assert entities[-1]["content"] == "Key entities: Ada, Lisbon"
    assert all(by_id[r]["content"].startswith("Key entities: ") for e in entities for r in e["replaces"])
    # merged (an assistant message that only asked for a tool has no content: it is no summary)
    assert any((by_id[r]["content"] or "").startswith("Summary of") for e in summaries for r in e["replaces"])
    assert any("T0" in e["content"] for e in summaries)  # the first turn lives on in a summary
    for entry in trimmed:  # a trimmed message replaces one longer message of its role
        (original,) = (by_id[r] for r in entry["replaces"])
        assert original["role"] == entry["role"] and entry["token_count"] < original["token_count"]
        assert entry["content"].endswith("shortened")
    assert all(e["role"] == "system" for e in entities + summaries)
    assert sum(1 for e in entries if e["source"] != "summarizer") >= 90  # the history keeps every message
    assert model.images_seen == {ENTITIES: 0, SUMMARY: 0, TRIM: 0}


async def test_images_are_summarised_and_trimmed_as_the_model_describes_them(
    mapi, script, model_server, agent
):
    script.reply = model = Model()
    budget = 900
    session = await _session(
        mapi, agent=agent["id"], token_budget=budget, context_overflow="adaptive", system_template="Be short."
    )

    def picture(number: int, words: int) -> list[dict[str, Any]]:
        text = f"T{number}: what is in this picture? " + "tell me everything " * words
        return [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": PNG}}]

    turns: list[Any] = [picture(0, 2), *(_filler(n) for n in range(1, 12)), picture(12, 120)]
    turns += [f"T{n}: and then? " + "lorem ipsum " * 8 for n in range(13, 24)]
    await converse(mapi, model_server, session["id"], budget, turns)
    assert model.images_seen[SUMMARY] >= 1 and model.images_seen[TRIM] >= 1  # the models saw the images
    entries = await _entries(mapi, session["id"])
    by_id = {e["id"]: e for e in entries}
    pictures = [e for e in entries if _images(e["content"])]
    assert len(pictures) == 2  # the history keeps both as they were sent
    trimmed = [e for e in entries if e["source"] == "summarizer" and e["role"] == "user"]
    (picture_trim,) = [e for e in trimmed if pictures[1]["id"] in e["replaces"]]
    assert picture_trim["content"] == "T12 shortened (an image of one red dot)"  # the image, as text
    summaries = [e for e in entries if e["source"] == "summarizer" and e["role"] == "system"]
    assert any(pictures[0]["id"] in s["replaces"] and "red dot" in s["content"] for s in summaries)
    assert all(not _images(m["content"]) for m in _chat_calls(model_server)[-1].messages)
    assert by_id[picture_trim["replaces"][0]]["content"] == pictures[1]["content"]


async def test_a_context_that_cannot_be_compressed_enough_is_a_clear_413(mapi, script, model_server, agent):
    def model(call: Call) -> str:  # a summariser that does not summarise
        return "words " * 400 if _is_compression(call) else "ok"

    script.reply = model
    session = await _session(mapi, agent=agent["id"], token_budget=300, context_overflow="adaptive")
    statuses = []
    for number in range(6):
        text = f"T{number}: " + "lorem ipsum dolor " * 20
        answer = await mapi.post(
            f"/sessions/{session['id']}/chat", json={"messages": [{"role": "user", "content": text}]}
        )
        statuses.append(answer.status_code)
        if answer.status_code != 201:
            break
    assert statuses[-1] == 413, statuses
    message = answer.json()["error"]["message"]
    assert "budget of 300" in message and re.search(r"\d+ tokens", message), message
    for call in _chat_calls(model_server):  # nothing over the budget was ever sent
        assert sum(count_tokens(m) for m in call.messages) <= 300


async def test_truncate_never_opens_with_an_assistant_or_an_orphan_tool_message(
    mapi, script, model_server, agent
):
    def model(call: Call) -> Reply | str:
        last = call.messages[-1]
        if last["role"] == "user" and "CALL" in _text(last["content"]):
            return Reply(tool_calls=[("note", {"what": "x"})])
        return f"noted {_tag(_text(last['content']))} " + "and a long answer " * 25

    script.reply = model
    budget = 400
    session = await _session(
        mapi, agent=agent["id"], token_budget=budget, context_overflow="truncate", system_template="Be short."
    )
    model_server.calls.clear()
    turns = [f"T{n}: hi" + (" CALL" if n % 3 == 1 else "") for n in range(30)]
    opened_after_drop = 0
    for number, text in enumerate(turns):
        messages: list[dict[str, Any]] = [{"role": "user", "content": text}]
        while messages:
            answer = await mapi.post(f"/sessions/{session['id']}/chat", json={"messages": messages})
            assert answer.status_code == 201, answer.text
            sent = model_server.calls[-1].messages
            assert sum(count_tokens(m) for m in sent) <= budget
            assert sent[1]["role"] == "user", [m["role"] for m in sent]
            called = {c["id"] for m in sent for c in m.get("tool_calls") or []}
            assert all(m["tool_call_id"] in called for m in sent if m["role"] == "tool")
            opened_after_drop += not sent[1]["content"].startswith("T0:")
            calls = answer.json()["choices"][0]["message"].get("tool_calls") or []
            messages = [{"role": "tool", "tool_call_id": c["id"], "content": f"T{number}x"} for c in calls]
    assert opened_after_drop > 20  # it did drop, many times


async def test_a_null_budget_is_the_models_context_window(mapi, script, model_server, agent):
    assert CONTEXT_WINDOWS["gpt-4o-mini"] == 128_000
    assert (
        token_budget(
            ChatSession("s", (), token_budget=None, context_overflow="truncate"), "openai/gpt-4o-mini"
        )
        == 128_000
    )
    assert (
        token_budget(
            ChatSession("s", (), token_budget=None, context_overflow="adaptive"), "claude-sonnet-4-5"
        )
        == 200_000
    )
    assert (
        token_budget(ChatSession("s", (), token_budget=None, context_overflow="truncate"), "my-local-model")
        is None
    )
    assert token_budget(ChatSession("s", (), token_budget=None, context_overflow=None), "gpt-4o-mini") is None
    assert token_budget(ChatSession("s", (), token_budget=50, context_overflow=None), "gpt-4o-mini") == 50
    script.reply = lambda call: "ok"
    session = await _session(
        mapi, agent=agent["id"], context_overflow="truncate", system_template="Be short."
    )
    big = "lorem ipsum dolor sit amet " * 4000  # about 20,000 tokens
    for number in range(8):
        answer = await mapi.post(
            f"/sessions/{session['id']}/chat",
            json={"messages": [{"role": "user", "content": f"T{number}: {big}"}]},
        )
        assert answer.status_code == 201, answer.text
    sizes = [sum(count_tokens(m) for m in c.messages) for c in model_server.calls]
    assert max(sizes) <= 128_000 and sizes[-1] > 100_000  # filled to the window, not beyond
    assert not any(_text(m["content"]).startswith("T0:") for m in model_server.calls[-1].messages)


async def _compressions_after(
    api: httpx.AsyncClient, model_server: Any, agent_id: str, seconds: float
) -> tuple[int, float]:
    """Chats to about 70% of a budget of 1000, then how many compression calls came within `seconds`."""
    session = await _session(
        api, agent=agent_id, token_budget=1000, context_overflow="adaptive", system_template="Be short."
    )
    model_server.calls.clear()
    share = 0.0
    for number in range(40):
        text = f"T{number}: " + "lorem ipsum dolor " * 5
        answer = await api.post(
            f"/sessions/{session['id']}/chat", json={"messages": [{"role": "user", "content": text}]}
        )
        assert answer.status_code == 201, answer.text
        share = sum(count_tokens(m) for m in model_server.calls[-1].messages) / 1000
        if share >= 0.7:
            break
    for _ in range(int(seconds * 10)):
        if any(_is_compression(c) for c in model_server.calls):
            break
        await asyncio.sleep(0.1)
    return sum(_is_compression(c) for c in model_server.calls), share


async def test_the_threshold_setting_decides_when_compression_starts(
    mapi, script, model_server, agent, postgres_url, temporal_env, store
):
    from tests.conftest import OPENAI_KEY, temporal_address
    from tests.stack import BackgroundStack

    script.reply = Model()
    compressed, share = await _compressions_after(mapi, model_server, agent["id"], 10)
    assert share < 0.9 and compressed > 0  # the default, half the budget: compressing at 70%
    _, key = await store.create_developer("threshold")
    async with (
        BackgroundStack(
            postgres_url,
            temporal_address(temporal_env),
            task_queue=f"threshold-{uuid.uuid4()}",
            openai_api_key=OPENAI_KEY,
            openai_base_url=model_server.openai_base_url,
            adaptive_context_start=0.9,
        ) as stack,
        httpx.AsyncClient(base_url=stack.url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as api,
    ):
        other = (await api.post("/agents", json={"name": "Ada", "model": "gpt-4o-mini"})).json()
        compressed, share = await _compressions_after(api, model_server, other["id"], 2)
    assert share < 0.9 and compressed == 0  # at 0.9, 70% of the budget starts nothing
