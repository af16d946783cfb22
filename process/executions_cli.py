"""`mint ls`, `status`, `watch`, `logs`, `resume`, `cancel` and `restart`: executions from the command line,
through the API of the stack `mint up` recorded (or MINT_API_URL / MINT_API_KEY)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from contracts.json import JsonObject
from process.api_calls import as_object, call, items, parse_value
from process.exit_codes import OUTCOMES
from process.follow import (
    follow,
    position,
    show_wait,
    when,
)
from process.stack_file import DATA_DIR_OPTION, URL_OPTION, MintApi, api_client, find_stack

STATUSES = ("queued", "starting", "running", "awaiting_input", "succeeded", "failed", "cancelled")
PAGE = 1000  # transitions read per request
CANCEL_WAIT_SECONDS = 10.0  # how long `mint cancel` waits to see the execution end


def _stack_options(command: Callable[..., Any]) -> Callable[..., Any]:
    return URL_OPTION(DATA_DIR_OPTION(command))


def _api(data_dir: Path | None, url: str | None) -> MintApi:
    return api_client(find_stack(data_dir, url))


@click.command("ls")
@click.option("--status", type=click.Choice(STATUSES), default=None, help="Only executions with this status.")
@click.option("--limit", type=click.IntRange(1, 1000), default=20, show_default=True)
@_stack_options
def list_executions(status: str | None, limit: int, data_dir: Path, url: str | None) -> None:
    """List recent executions across tasks, newest first."""
    params: dict[str, str | int] = {"limit": limit, **({"status": status} if status else {})}
    with _api(data_dir, url) as api:
        executions = items(call(api, "GET", "/executions", params=params))
    if not executions:
        click.echo("no executions" + (f" with status {status}" if status else ""))
        return
    click.echo(f"{'ID':<36}  {'TASK':<24}  {'STATUS':<14}  CREATED")
    for e in executions:
        click.echo(
            f"{e['id']!s:<36}  {_cut(str(e['task_name']), 24):<24}  {e['status']!s:<14}  {_local(str(e['created_at']))}"
        )


@click.command("status")
@click.argument("execution_id")
@_stack_options
def show_status(execution_id: str, data_dir: Path, url: str | None) -> None:
    """Show an execution: its status, task, current step, and its output, error or open wait."""
    with _api(data_dir, url) as api:
        execution = call(api, "GET", f"/executions/{execution_id}")
        task = call(api, "GET", f"/tasks/{execution['task_id']}")
        transitions = list(_transitions(api, execution_id))
        status = execution["status"]
        timers = items(call(api, "GET", f"/executions/{execution_id}/timers")) if status == "running" else []
    click.echo(f"execution  {execution['id']}")
    click.echo(f"task       {task['name']} ({execution['task_id']}, version {execution['task_version']})")
    click.echo(f"status     {status}")
    click.echo(
        f"created    {_local(str(execution['created_at']))}   updated {_local(str(execution['updated_at']))}"
    )
    if transitions:
        last = transitions[-1]
        label = f" ({last['step_label']})" if last.get("step_label") else ""
        if last.get("next") and status not in OUTCOMES:
            click.echo(f"step       {position(last['next'])}")
        click.echo(f"last       {last['type']} at {position(last.get('current'))}{label}")
    if timers:
        click.echo(f"sleeping   until {when(str(timers[0]['fires_at']))}")
    listed = execution.get("waits")
    waits = [as_object(w) for w in listed] if isinstance(listed, list) else []
    for wait in waits:
        show_wait(str(wait.get("step")), wait.get("info"))
        chosen = ("--wait", str(wait.get("id"))) if len(waits) > 1 else ()
        command = api.stack.command("resume", str(execution["id"]), *chosen, "--input", "JSON")
        click.echo(f"answer it with: {command}")
    if status == "succeeded":
        output = json.dumps(execution["output"], indent=2, ensure_ascii=False)
        click.echo("output     " + output.replace("\n", "\n           "))
    elif execution.get("error"):
        click.echo(f"error      {execution['error']}")


@click.command("watch")
@click.argument("execution_id")
@_stack_options
def watch(execution_id: str, data_dir: Path, url: str | None) -> None:
    """Follow an execution's transitions live until it ends; exit 0 only if it succeeded."""
    with _api(data_dir, url) as api:
        execution = call(api, "GET", f"/executions/{execution_id}")  # a wrong id fails here, in one line
        code = follow(api, str(execution["id"]), answer_waits=False)
    raise SystemExit(code)


@click.command("logs")
@click.argument("execution_id")
@_stack_options
def logs(execution_id: str, data_dir: Path, url: str | None) -> None:
    """Print all of an execution's transitions, oldest first, with their whole outputs."""
    with _api(data_dir, url) as api:
        call(api, "GET", f"/executions/{execution_id}")
        for seq, transition in enumerate(_transitions(api, execution_id), start=1):
            label = f" ({transition['step_label']})" if transition.get("step_label") else ""
            where = position(transition.get("current"))
            created = _local(str(transition["created_at"]))
            click.echo(
                f"#{seq:<4} {transition['type']!s:<13} {where}{label}  {created}  id {transition['id']}"
            )
            output = json.dumps(transition.get("output"), indent=2, ensure_ascii=False)
            click.echo("\n".join(f"      {line}" for line in output.splitlines()))
            note = as_object(transition.get("metadata")).get("log")
            if note is not None:
                click.echo(f"      log: {note}")


@click.command("resume")
@click.argument("execution_id")
@click.option("--input", "input_text", required=True, help="The answer to the open wait, as JSON (or YAML).")
@click.option("--wait", "wait_id", default=None, help="The open wait to answer (an id `mint status` shows).")
@_stack_options
def resume(execution_id: str, input_text: str, wait_id: str | None, data_dir: Path, url: str | None) -> None:
    """Answer an execution's open wait: the one `--wait` names, else the oldest."""
    try:
        value = parse_value(input_text)
    except ValueError as exc:
        raise click.ClickException(f"cannot read --input: {exc}") from None
    body: JsonObject = {"status": "running", "input": value, **({"wait_id": wait_id} if wait_id else {})}
    with _api(data_dir, url) as api:
        execution = call(api, "PUT", f"/executions/{execution_id}", json=body)
    click.echo(
        f"resumed execution {execution['id']}; follow it with: {api.stack.command('watch', str(execution['id']))}"
    )


@click.command("cancel")
@click.argument("execution_id")
@click.option("--reason", default=None, help="Why, kept as the execution's error.")
@_stack_options
def cancel(execution_id: str, reason: str | None, data_dir: Path, url: str | None) -> None:
    """Cancel an execution and wait (briefly) to see it end."""
    body = {"status": "cancelled", **({"reason": reason} if reason else {})}
    with _api(data_dir, url) as api:
        execution = call(api, "PUT", f"/executions/{execution_id}", json=body)
        deadline = time.monotonic() + CANCEL_WAIT_SECONDS
        while execution["status"] not in OUTCOMES and time.monotonic() < deadline:
            time.sleep(0.2)
            execution = call(api, "GET", f"/executions/{execution['id']}")
    if execution["status"] in OUTCOMES:
        click.echo(f"execution {execution['id']} {execution['status']}")
    else:
        click.echo(f"cancel requested; execution {execution['id']} is still {execution['status']}")


@click.command("restart")
@click.argument("execution_id")
@click.option(
    "--from",
    "from_transition",
    required=True,
    help="The transition to run again from: its id, or its number in `mint logs` (3 or #3).",
)
@click.option("--input", "input_text", default=None, help="That step's input instead, as JSON (or YAML).")
@_stack_options
def restart(
    execution_id: str, from_transition: str, input_text: str | None, data_dir: Path, url: str | None
) -> None:
    """Run an execution again from a step: a new execution keeps the transitions before it and runs on from
    there. Followed like `mint run` (a wait prompts for its answer); exits with its outcome."""
    body: JsonObject = {}
    if input_text is not None:
        try:
            body["input"] = parse_value(input_text)
        except ValueError as exc:
            raise click.ClickException(f"cannot read --input: {exc}") from None
    with _api(data_dir, url) as api:
        body["from_transition"] = _transition_id(api, execution_id, from_transition)
        started = call(api, "POST", f"/executions/{execution_id}/restart", json=body)
        click.echo(
            f"execution {started['id']} restarted from execution {execution_id}, transition {from_transition}"
        )
        code = follow(api, str(started["id"]), answer_waits=True)
    raise SystemExit(code)


def _transition_id(api: MintApi, execution_id: str, given: str) -> str:
    """The id of the transition `given` names: an id, or a number as `mint logs` shows it (#1 is the first)."""
    number = given.removeprefix("#")
    if not number.isdigit():
        return given
    listed = list(_transitions(api, execution_id))
    if not 1 <= int(number) <= len(listed):
        raise click.ClickException(
            f"execution {execution_id} has {len(listed)} transitions (see `mint logs {execution_id}`): "
            f"none is #{number}"
        )
    return str(listed[int(number) - 1]["id"])


COMMANDS = (list_executions, show_status, watch, logs, resume, cancel, restart)


def _transitions(api: MintApi, execution_id: str) -> Iterator[JsonObject]:
    offset = 0
    while True:
        params = {"direction": "asc", "limit": PAGE, "offset": offset}
        page = items(call(api, "GET", f"/executions/{execution_id}/transitions", params=params))
        yield from page
        if len(page) < PAGE:
            return
        offset += PAGE


def _local(iso: str) -> str:
    return f"{datetime.fromisoformat(iso.replace('Z', '+00:00')).astimezone():%Y-%m-%d %H:%M:%S}"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
