"""Live tokens from prompt steps (`stream: true`): the transition stream sends `delta` events with the text as
the model writes it, the step's transition still holds the whole answer, a stream that connects mid-step
gets the text so far as one delta, deltas carry no id (Last-Event-ID resumes transitions only), another
developer gets 404, output guardrails hold the text back, and `mint watch` prints it as it comes.

The local model server holds its answer after the first piece of text (Reply.hold) until the test has read
what came before, so each delta checked here was read while the model was still sending.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from activities import live_text as publishing
from contracts.records.live_text import LiveText
from infra.store.step_streams import StepStreams
from services.executions.deltas import Delta, LiveDeltas
from tests.helpers import create_agent, create_task, start, transitions, wait_for_status
from tests.model_server import Reply
from tests.test_streams import sse_events

ANSWER = "Once upon a time, a durable workflow streamed its tokens to whoever listened."
FIRST = ANSWER[:8]  # the model server's first piece
HANG_GUARD = 60.0


def _task(
    guardrails: dict[str, Any] | None = None, stream: bool = True, model: str = "gpt-4o-mini"
) -> dict[str, Any]:
    settings = {"stream": stream, "model": model}
    step = {"label": "story", "prompt": "Tell me a story", "unwrap": True, "settings": settings}
    task: dict[str, Any] = {"name": "storyteller", "main": [step]}
    if guardrails:
        task["guardrails"] = guardrails
    return task


async def _started(mapi: httpx.AsyncClient, task: dict[str, Any]) -> str:
    created = await create_task(mapi, (await create_agent(mapi))["id"], task)
    return str((await start(mapi, created["id"]))["id"])


def _held(script: Any, text: str = ANSWER) -> threading.Event:
    """The model answers `text`, holding after its first piece until the event is set."""
    hold = threading.Event()
    script.reply = lambda call: Reply(content=text, hold=hold)
    return hold


async def _events(
    api: httpx.AsyncClient, execution_id: str, headers: dict[str, str] | None = None
) -> AsyncIterator[dict[str, Any]]:
    async with api.stream(
        "GET", f"/executions/{execution_id}/transitions.stream", headers=headers or {}
    ) as response:
        assert response.status_code == 200, await response.aread()
        async for event in sse_events(response):
            yield event


async def _rest(events: AsyncIterator[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event async for event in events]


def _text(events: list[dict[str, Any]]) -> str:
    return "".join(e["data"]["text"] for e in events if e.get("event") == "delta")


@pytest.mark.parametrize("model", ["gpt-4o-mini", "claude-haiku-4-5"])
async def test_deltas_come_while_the_model_is_still_sending(mapi, script, model):
    hold = _held(script)
    execution_id = await _started(mapi, _task(model=model))
    seen: list[dict[str, Any]] = []
    async with asyncio.timeout(HANG_GUARD):
        events = _events(mapi, execution_id)
        async for event in events:
            seen.append(event)
            if event.get("event") == "delta":
                break
        # The model has sent its first piece and waits: this delta came while it was still sending.
        assert not hold.is_set()
        assert seen[-1] == {"event": "delta", "data": {"step": "story", "text": FIRST}}  # no `id:`
        assert [e["data"]["type"] for e in seen[:-1]] == ["init"]  # no step transition yet
        hold.set()
        seen += await _rest(events)
    assert _text(seen) == ANSWER
    kinds = [e["event"] for e in seen]
    assert kinds[0] == "transition" and kinds[-1] == "transition" and seen[-1]["data"]["type"] == "finish"
    last_delta = max(i for i, kind in enumerate(kinds) if kind == "delta")
    step = next(i for i, e in enumerate(seen) if e["event"] == "transition" and e["data"]["type"] == "step")
    assert last_delta < step  # the text, then the step's transition
    written = await transitions(mapi, execution_id)
    steps = [t for t in written if t["type"] == "step"]
    assert len(steps) == 1 and steps[0]["output"] == ANSWER  # the whole answer, written once
    assert [str(t["id"]) for t in written] == [e["data"]["id"] for e in seen if e["event"] == "transition"]


async def test_a_stream_that_connects_mid_step_gets_the_text_so_far_then_the_rest(mapi, script):
    hold = _held(script)
    execution_id = await _started(mapi, _task())
    async with asyncio.timeout(HANG_GUARD):
        first = _events(mapi, execution_id)
        async for event in first:
            if event.get("event") == "delta":
                break
        late = _events(mapi, execution_id, {"Last-Event-ID": "1"})  # after `init`: no transition to send
        opening = await anext(late)
        assert opening == {"event": "delta", "data": {"step": "story", "text": FIRST}}
        hold.set()
        rest = await _rest(late)
        await _rest(first)
    assert FIRST + _text(rest) == ANSWER
    assert [e["data"]["type"] for e in rest if e["event"] == "transition"] == ["step", "finish"]
    assert all("id" in e for e in rest if e["event"] == "transition")
    assert all("id" not in e for e in rest if e["event"] == "delta")


async def test_last_event_id_resumes_transitions_and_a_finished_step_sends_no_delta(mapi, script):
    hold = _held(script)
    hold.set()
    execution_id = await _started(mapi, _task())
    assert (await wait_for_status(mapi, execution_id))["status"] == "succeeded"
    async with asyncio.timeout(HANG_GUARD):
        everything = await _rest(_events(mapi, execution_id))
        resumed = await _rest(_events(mapi, execution_id, {"Last-Event-ID": "1"}))
    assert [e["event"] for e in everything] == ["transition"] * 3  # its answer is in its transition
    assert resumed == everything[1:]


async def test_another_developer_cannot_read_the_stream(mapi, script, store, model_stack):
    hold = _held(script)
    execution_id = await _started(mapi, _task())
    _, other_key = await store.create_developer("other")
    async with httpx.AsyncClient(
        base_url=model_stack.url, headers={"Authorization": f"Bearer {other_key}"}, timeout=30
    ) as other:
        try:
            async with asyncio.timeout(HANG_GUARD):
                events = _events(mapi, execution_id)
                async for event in events:
                    if event.get("event") == "delta":
                        break
                refused = await other.get(f"/executions/{execution_id}/transitions.stream")
                assert refused.status_code == 404, refused.text
                hold.set()
                assert FIRST + _text(await _rest(events)) == ANSWER
        finally:
            hold.set()


async def test_output_guardrails_hold_the_text_back(mapi, script):
    script.reply = lambda call: Reply(content=ANSWER, delay=0.01)
    passing = {"output": [{"name": "short", "check": "$ len(_) < 1000", "message": "too long"}]}
    execution_id = await _started(mapi, _task(passing))
    async with asyncio.timeout(HANG_GUARD):
        seen = await _rest(_events(mapi, execution_id))
    assert [e["event"] for e in seen] == ["transition"] * 3
    assert seen[1]["data"]["output"] == ANSWER

    refusing = {"output": [{"name": "no_workflows", "check": "$ 'workflow' not in _", "message": "no"}]}
    execution_id = await _started(mapi, _task(refusing))
    async with asyncio.timeout(HANG_GUARD):
        seen = await _rest(_events(mapi, execution_id))
    assert "delta" not in [e["event"] for e in seen]
    failed = await wait_for_status(mapi, execution_id)
    assert failed["status"] == "failed" and "OutputGuardrailTripwire" in failed["error"], failed


async def test_a_step_without_stream_sends_no_delta(mapi, script):
    script.reply = lambda call: Reply(content=ANSWER)
    execution_id = await _started(mapi, _task(stream=False))
    async with asyncio.timeout(HANG_GUARD):
        seen = await _rest(_events(mapi, execution_id))
    assert [e["event"] for e in seen] == ["transition"] * 3 and seen[1]["data"]["output"] == ANSWER


async def test_a_call_run_again_is_sent_from_its_start(mapi, store):
    """A retried call (a crash mid-stream) writes its text under a new run: a listener gets it from its
    start, after what it had of the lost attempt."""
    execution_id = await _started(mapi, {"name": "idle", "main": [{"sleep": {"seconds": 30}}]})
    developer = await store.pool.fetchval(
        "SELECT developer_id::text FROM executions WHERE id = $1", execution_id
    )
    streams = StepStreams(store.pool)
    key, lost, again = "call/1", str(uuid.uuid4()), str(uuid.uuid4())
    await streams.publish(execution_id, key, "main[0]", lost, 1, "Once upon", False)

    live = LiveDeltas(streams, developer, execution_id)
    assert await live.so_far() == [Delta("main[0]", "Once upon")]
    await streams.publish(execution_id, key, "main[0]", again, 2, "Once", False)
    assert await live.new() == [Delta("main[0]", "Once")]
    await streams.publish(execution_id, key, "main[0]", again, 2, "Once upon a time", True)
    assert await live.new() == [Delta("main[0]", " upon a time")]
    assert await live.new() == []
    assert await LiveDeltas(streams, developer, execution_id).so_far() == []  # done: in its transition
    assert await streams.live(str(uuid.uuid4()), execution_id) == []  # another developer's reads see none
    assert isinstance((await streams.live(developer, execution_id))[0], LiveText)
    await mapi.put(f"/executions/{execution_id}", json={"status": "cancelled", "reason": "done"})


async def test_mint_watch_prints_the_tokens_as_they_come(mapi, script, model_stack, api_key):
    hold = _held(script)
    execution_id = await _started(mapi, _task())
    env = {**os.environ, "MINT_API_KEY": api_key}
    command = [sys.executable, "-m", "process.cli", "watch", execution_id, "--url", model_stack.url]
    printed = bytearray()
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) as watcher:

        def read() -> None:
            assert watcher.stdout is not None
            while chunk := os.read(watcher.stdout.fileno(), 4096):
                printed.extend(chunk)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            async with asyncio.timeout(HANG_GUARD):
                while FIRST.encode() not in printed:  # printed while the model still holds the rest
                    await asyncio.sleep(0.05)
            assert not hold.is_set() and ANSWER.encode() not in printed
        finally:
            hold.set()
            code = await asyncio.to_thread(watcher.wait, HANG_GUARD)
            reader.join(5)
        errors = watcher.stderr.read().decode() if watcher.stderr else ""
    out = printed.decode()
    assert code == 0, (out, errors)
    assert f"{'text':<13} story {ANSWER}\n" in out, out
    assert out.index(ANSWER) < out.index("finish")


async def test_mint_run_streams_the_example(mapi, script, model_stack, api_key, model_server):
    script.reply = lambda call: Reply(content=ANSWER, delay=0.01)
    example = Path(__file__).parent.parent / "examples" / "live_tokens.yaml"
    command = [
        sys.executable,
        "-m",
        "process.cli",
        "run",
        str(example),
        "--input",
        '{"topic": "lighthouses"}',
    ]
    ran = await asyncio.to_thread(
        subprocess.run,
        [*command, "--url", model_stack.url],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "MINT_API_KEY": api_key},
    )
    assert ran.returncode == 0, ran.stderr
    assert f"{'text':<13} story {ANSWER}\n" in ran.stdout, ran.stdout
    assert "lighthouses" in model_server.calls[-1].messages[-1]["content"]


class _CutOff(threading.Event):
    """A hold that breaks the model server's answer off after its first piece (the connection closes)."""

    def wait(self, timeout: float | None = None) -> bool:
        raise ConnectionAbortedError("the model's answer broke off")


async def test_an_answer_cut_off_mid_stream_is_retried_and_listeners_get_the_retrys_text(mapi, script):
    replies = iter([Reply(content=ANSWER, hold=_CutOff()), Reply(content=ANSWER, delay=0.005)])
    script.reply = lambda call: next(replies)
    execution_id = await _started(mapi, _task())
    async with asyncio.timeout(HANG_GUARD):
        seen = await _rest(_events(mapi, execution_id))
    assert _text(seen) == FIRST + ANSWER  # the lost attempt's first piece, then the retry's from its start
    steps = [e["data"] for e in seen if e["event"] == "transition" and e["data"]["type"] == "step"]
    assert len(steps) == 1 and steps[0]["output"] == ANSWER
    assert steps[0]["metadata"]["attempts"] == 2


class _CountingStreams:
    """Stands in for StepStreams: counts the writes a call's live text makes, and keeps the last."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, bool]] = []
        self.swept = 0

    async def publish(self, execution, key, step, run, attempt, text, done) -> None:
        await asyncio.sleep(0.002)  # a database round trip
        self.writes.append((text, done))

    async def sweep(self) -> None:
        self.swept += 1


async def test_live_text_coalesces_its_writes():
    streams = _CountingStreams()
    live = publishing.LiveText(streams, str(uuid.uuid4()), "call/1", "main[0]", 1)
    loop = asyncio.get_running_loop()
    began = loop.time()
    for i in range(500):  # a token every millisecond or so
        await live.piece(f"{i} ")
        await asyncio.sleep(0.001)
    await live.close()
    took = loop.time() - began
    whole = "".join(f"{i} " for i in range(500))
    assert streams.writes[-1] == (whole, True) and streams.swept == 1
    assert len(streams.writes) <= took / publishing.INTERVAL + 2, (len(streams.writes), took)
    assert all(whole.startswith(text) for text, _ in streams.writes)

    quiet = _CountingStreams()
    await publishing.LiveText(quiet, str(uuid.uuid4()), "call/2", "main[0]", 1).close()  # a call with no text
    assert quiet.writes == [] and quiet.swept == 0
