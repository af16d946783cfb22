"""Following an execution live (`mint run`, `mint watch`): one line per transition from the API's SSE stream,
what a wait asks for, when a sleep wakes, the text of prompt steps that stream (`delta` events) as it comes,
and the outcome; Ctrl-C leaves the execution running.

The stream is read in a thread of its own and handed over through a queue, so the terminal stays live (a
spinner, the prompt for a wait) while nothing arrives. Each transition comes with its sequence number, and a
stream that ends early is reopened after the last one seen, so none is shown twice.

While `mint run` prompts for a wait's answer it keeps reading that queue (and asks for the execution's status
now and then): when the wait is answered elsewhere (`mint resume`, another client, its timeout), it stops
prompting, says so, and follows on. Without stdin to read (it ended), it says how to answer the wait and
follows on too: the command ends with the execution's outcome either way.
"""

from __future__ import annotations

import json
import queue
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import click
import httpx

from contracts.json import JsonObject, JsonValue
from process.api_calls import api_error, as_object, call, items, parse_value
from process.exit_codes import OUTCOMES, ExitCode
from process.stack_file import MintApi
from process.terminal_input import TerminalInput

# How long after the last transition the follower asks what a quiet execution is doing (then every 10 s).
QUIET_CHECKS = (0.5, 2.0, 10.0)
TICK = 0.2  # the spinner's pace
SPINNER = "|/-\\"
STREAM_TIMEOUT = httpx.Timeout(30.0, read=60.0)  # the stream sends a keep-alive every 15 s
STATUS_CHECK = 2.0  # while prompting, how often the execution's status is asked for (the stream is faster)
PROMPT = "input (JSON or YAML; empty for {}): "


@dataclass
class _Wait:
    seq: int
    id: str  # its `wait` transition's id, which a resume names
    where: str
    info: JsonValue
    asked: bool = False
    # Whether the execution was seen awaiting input since this wait began (its status may lag its `wait`).
    awaited: bool = False


@dataclass
class _State:
    seq: int = 0  # the last transition seen
    waits: dict[int, _Wait] = field(default_factory=dict)  # open waits by the seq of their `wait`
    timer_shown: str | None = None
    quiet_since: float = 0.0
    checks: int = 0
    live: str | None = None  # the step whose live text (`delta` events) the current line shows


def follow(api: MintApi, execution_id: str, answer_waits: bool) -> int:
    """Print the execution's transitions as they happen until it ends; return the exit code of its outcome.
    With `answer_waits`, a wait prompts on the terminal for its input. On Ctrl-C, say that the execution goes
    on and how to get back to it, and return INTERRUPTED."""
    try:
        return _Follower(api, execution_id, answer_waits).run()
    except KeyboardInterrupt:
        say_detached(api, execution_id, "stopped following")
        return ExitCode.INTERRUPTED


def say_detached(api: MintApi, execution_id: str, reason: str) -> None:
    """Tell the person that the execution goes on without them, and how to get back to it."""
    status = _status_quietly(api, execution_id)
    if sys.stdout.isatty():
        click.echo(_clear())  # off the line of the spinner, the prompt or the ^C
    going = f" ({status})" if status else ""
    command = api.stack.command
    lines = [
        f"{reason}: execution {execution_id} goes on{going}.",
        f"  follow it:  {command('watch', execution_id)}",
    ]
    if status in (None, "awaiting_input"):
        lines.append(f"  answer it:  {command('resume', execution_id, '--input', 'JSON')}")
    lines.append(f"  cancel it:  {command('cancel', execution_id)}")
    click.echo("\n".join(lines), err=True)


class _Follower:
    def __init__(self, api: MintApi, execution_id: str, answer_waits: bool):
        self.api = api
        self.execution_id = execution_id
        self.answer_waits = answer_waits
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.held: list[tuple[str, Any]] = []  # taken from `events` while prompting, handled after
        self.state = _State(quiet_since=time.monotonic())
        self.tick = 0
        self.input = TerminalInput()

    def run(self) -> int:
        self._open_stream()
        while True:
            try:
                kind, item = self.held.pop(0) if self.held else self.events.get(timeout=TICK)
            except queue.Empty:  # caught up with the stream: waits seen now are still open
                self._ask_open_waits()
                self._quiet()
                continue
            if kind == "transition":
                self._show(*item)
            elif kind == "delta":
                self._show_text(item)
            elif kind == "error":
                raise item
            else:  # the stream ended: the execution ended, or the connection did
                execution = call(self.api, "GET", f"/executions/{self.execution_id}")
                self._end_text()  # a reopened stream starts a step's text again, on a line of its own
                if execution["status"] in OUTCOMES:
                    return _outcome(execution)
                time.sleep(1)
                self._open_stream()

    def _open_stream(self) -> None:
        reader = threading.Thread(target=self._read_stream, args=(self.state.seq,), daemon=True)
        reader.start()

    def _read_stream(self, after: int) -> None:
        path = f"/executions/{self.execution_id}/transitions.stream"
        try:
            with self.api.stream(
                "GET", path, headers={"Last-Event-ID": str(after)}, timeout=STREAM_TIMEOUT
            ) as response:
                if response.status_code >= 400:
                    response.read()
                    raise api_error(self.api, response)
                for kind, item in _sse_events(response.iter_lines()):
                    self.events.put((kind, item))
        except httpx.TransportError:
            pass  # cut off (the API restarted): reopened after the last transition seen
        except Exception as exc:  # noqa: BLE001 - handed to the main thread, which raises it
            self.events.put(("error", exc))
            return
        self.events.put(("end", None))

    def _show(self, seq: int, transition: JsonObject) -> None:
        if seq <= self.state.seq:
            return  # already shown (a reopened stream starts after it; this is the guard)
        self.state.seq = seq
        self.state.quiet_since, self.state.checks = time.monotonic(), 0
        self._end_text()
        click.echo(_clear() + transition_line(transition))
        if transition["type"] == "wait":
            where = position(transition.get("current"))
            self.state.waits[seq] = _Wait(seq, str(transition.get("id")), where, wait_info(transition))
        elif transition["type"] == "resume":
            answered = as_object(transition.get("metadata")).get("wait_seq")
            if isinstance(answered, int):
                self.state.waits.pop(answered, None)

    def _show_text(self, delta: JsonObject) -> None:
        """A streamed prompt step's new text, printed as it comes, on a line of its own after its step."""
        step, text = str(delta.get("step")), delta.get("text")
        if self.state.live != step:
            self._end_text()
            click.echo(f"{_clear()}{'text':<13} {step} ", nl=False)
            self.state.live = step
        click.echo(text if isinstance(text, str) else "", nl=False)
        self.state.quiet_since, self.state.checks = time.monotonic(), 0

    def _end_text(self) -> None:
        """End the line of live text, if one is open (what is printed next starts on its own line)."""
        if self.state.live is not None:
            click.echo("")
            self.state.live = None

    def _ask_open_waits(self) -> None:
        """Show each open wait once, oldest first (the order resumes answer them), and ask for its input."""
        for wait in sorted(self.state.waits.values(), key=lambda w: w.seq):
            if wait.asked:
                continue
            wait.asked = True
            show_wait(wait.where, wait.info)
            if self.answer_waits:
                self._answer(wait)
            if not self.answer_waits:  # never asked, or stdin ended
                click.echo(
                    f"answer it with: {self.api.stack.command('resume', self.execution_id, '--input', 'JSON')}"
                )

    def _answer(self, wait: _Wait) -> None:
        """Prompt for the wait's answer and send it; stop prompting when the wait is answered elsewhere."""
        click.echo(PROMPT, nl=False)
        checked = time.monotonic()
        while True:
            try:
                text = self.input.line(TICK)
            except EOFError:
                click.echo("")
                click.echo("no input on stdin: following on until the execution ends", err=True)
                self.answer_waits = False
                return
            if text is None:
                ask_status = time.monotonic() - checked >= STATUS_CHECK
                checked = time.monotonic() if ask_status else checked
                if (gone := self._no_longer_open(wait, ask_status)) is not None:
                    click.echo(f"\n{gone}")
                    return
                continue
            if not self.input.is_terminal():
                click.echo(text)  # piped input is not echoed: show what was read
            try:
                value = parse_value(text) if text.strip() else {}
            except ValueError as exc:
                click.echo(f"cannot read that: {exc}; try again", err=True)
                click.echo(PROMPT, nl=False)
                continue
            if self._resume(wait, value):
                return
            click.echo(PROMPT, nl=False)

    def _resume(self, wait: _Wait, value: JsonValue) -> bool:
        """Answer `wait` (by its id); False when the API refused the input (its schema), to ask again."""
        body: JsonObject = {"status": "running", "input": value, "wait_id": wait.id}
        try:
            call(self.api, "PUT", f"/executions/{self.execution_id}", json=body)
        except click.ClickException as exc:  # answered meanwhile (another client, a timeout), or refused
            click.echo(f"could not resume: {exc.message}", err=True)
            return "(HTTP 422)" not in exc.message
        return True

    def _no_longer_open(self, wait: _Wait, ask_status: bool) -> str | None:
        """What ended the wait while we prompted, or None while it is open: a resume naming it in the
        stream (what arrives is held for the main loop), else, when `ask_status` (or the stream ended), a
        status that moved on from awaiting_input."""
        while True:
            try:
                kind, item = self.events.get_nowait()
            except queue.Empty:
                break
            self.held.append((kind, item))
            if kind == "delta":
                continue
            if kind != "transition":
                ask_status = True  # the stream ended (or failed): the status says why
                continue
            transition = item[1]
            answered = as_object(transition.get("metadata")).get("wait_seq")
            if transition.get("type") == "resume" and answered == wait.seq:
                return f"the wait at {wait.where} was answered elsewhere; following on"
        if not ask_status:
            return None
        status = _status_quietly(self.api, self.execution_id)
        if status in OUTCOMES:
            return f"the wait at {wait.where} is over: the execution {status}"
        if status == "awaiting_input" or status is None:
            wait.awaited = wait.awaited or status == "awaiting_input"
            return None
        # Its status may lag its `wait`: only a move away from awaiting_input says it was answered.
        return f"the wait at {wait.where} was answered elsewhere; following on" if wait.awaited else None

    def _quiet(self) -> None:
        """Nothing arrived for a while: say what the execution is waiting on (a sleep's end), spin."""
        state = self.state
        delay = QUIET_CHECKS[min(state.checks, len(QUIET_CHECKS) - 1)]
        if time.monotonic() - state.quiet_since >= delay:
            state.quiet_since, state.checks = time.monotonic(), state.checks + 1
            self._show_timer()
        if sys.stdout.isatty() and self.state.live is None:  # the spinner would overwrite live text
            self.tick += 1
            click.echo(f"\r{SPINNER[self.tick % len(SPINNER)]} ", nl=False)

    def _show_timer(self) -> None:
        try:
            execution = call(self.api, "GET", f"/executions/{self.execution_id}")
            if execution["status"] not in ("running", "awaiting_input"):
                return
            timers = items(call(self.api, "GET", f"/executions/{self.execution_id}/timers"))
        except click.ClickException:
            return  # a nicety: the stream, read meanwhile, reports an API that is gone
        fires_at = timers[0].get("fires_at") if timers else None
        if not isinstance(fires_at, str) or fires_at == self.state.timer_shown:
            return
        self.state.timer_shown = fires_at
        until = when(fires_at)
        what = "sleeping until" if execution["status"] == "running" else "waiting for input until"
        click.echo(f"{_clear()}{what} {until}")


def transition_line(transition: JsonObject) -> str:
    label = f" ({transition['step_label']})" if transition.get("step_label") else ""
    output = json.dumps(transition.get("output"))
    return f"{transition.get('type')!s:<13} {position(transition.get('current'))}{label} {output[:200]}"


def position(current: JsonValue) -> str:
    """A transition's place (its `current` or `next`): `main[2]`."""
    place = as_object(current)
    return f"{place.get('workflow')}[{place.get('step')}]"


def wait_info(transition: JsonObject) -> JsonValue:
    """What a `wait` transition asks for: a wait_for_input step's `info`, else (a prompt's function tool
    call, answered by the client) its whole output."""
    output = transition.get("output")
    return output["info"] if isinstance(output, dict) and "info" in output else output


def show_wait(where: str, info: JsonValue) -> None:
    """What a wait asks for: its `info`, as the task wrote it."""
    text = info if isinstance(info, str) else json.dumps(info, indent=2, ensure_ascii=False)
    click.echo(f"waiting for input at {where}:")
    click.echo("\n".join(f"  {line}" for line in text.splitlines()))


def when(iso: str) -> str:
    """A time from the API as local time, with how far off it is."""
    moment = datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone()
    left = (moment - datetime.now(moment.tzinfo)).total_seconds()
    return f"{moment:%Y-%m-%d %H:%M:%S %Z} ({_duration(left)})"


def _duration(seconds: float) -> str:
    if seconds <= 0:
        return "now"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    parts = [f"{n}{unit}" for n, unit in ((days, "d"), (hours, "h"), (minutes, "m"), (secs, "s")) if n]
    return "in " + " ".join(parts[:2])


def _outcome(execution: JsonObject) -> ExitCode:
    status = str(execution["status"])
    click.echo(f"{_clear()}{status}")
    if status == "succeeded":
        click.echo(json.dumps(execution["output"], indent=2, ensure_ascii=False))
    elif execution.get("error"):
        click.echo(f"error: {execution['error']}", err=True)
    return OUTCOMES[status]


def _sse_events(lines: Iterator[str]) -> Iterator[tuple[str, Any]]:
    """("transition", (seq, transition)) for each `transition` event of an SSE stream, and ("delta", {step,
    text}) for each `delta` (a streamed prompt step's new text, which has no id)."""
    event_id, kind, data = 0, None, list[str]()
    for line in lines:
        if line == "":
            value = json.loads("\n".join(data)) if kind in ("transition", "delta") and data else None
            if isinstance(value, dict):
                yield ("transition", (event_id, value)) if kind == "transition" else ("delta", value)
            kind, data = None, []
        elif line.startswith("id:"):
            event_id = int(line[3:].strip())
        elif line.startswith("event:"):
            kind = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))


def _status_quietly(api: MintApi, execution_id: str) -> str | None:
    try:
        response = api.get(f"/executions/{execution_id}", timeout=5)
        return response.json()["status"] if response.status_code == 200 else None
    except (httpx.HTTPError, click.ClickException, KeyboardInterrupt, ValueError, KeyError):
        return None


def _clear() -> str:
    """On a terminal, erase the spinner before a line is printed."""
    return "\r\x1b[2K" if sys.stdout.isatty() else ""
