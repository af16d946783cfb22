"""`mint schedule ls/create/pause/resume/trigger/rm`: a task's schedules from the command line, through the API
of the stack `mint up` recorded (or MINT_API_URL / MINT_API_KEY)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from contracts.json import JsonObject
from process.api_calls import call, items, parse_value
from process.stack_file import DATA_DIR_OPTION, URL_OPTION, MintApi, api_client, find_stack

OVERLAPS = ("skip", "buffer_one", "allow_all", "cancel_other")


def _stack_options(command: Callable[..., Any]) -> Callable[..., Any]:
    return URL_OPTION(DATA_DIR_OPTION(command))


def _api(data_dir: Path | None, url: str | None) -> MintApi:
    return api_client(find_stack(data_dir, url))


@click.group("schedule")
def schedule() -> None:
    """A task's schedules: runs on a cron or an interval, held by Temporal Schedules."""


@schedule.command("ls")
@click.argument("task_id")
@_stack_options
def list_schedules(task_id: str, data_dir: Path | None, url: str | None) -> None:
    """List a task's schedules: when each fires, whether it is paused, and its next run."""
    with _api(data_dir, url) as api:
        found = items(call(api, "GET", f"/tasks/{task_id}/schedules", params={"limit": 1000}))
    if not found:
        click.echo(f"task {task_id} has no schedules")
        return
    click.echo(f"{'ID':<36}  {'WHEN':<32}  {'STATE':<7}  NEXT RUN")
    for s in found:
        state = "paused" if s.get("paused") else "active"
        click.echo(f"{s['id']!s:<36}  {_when(s):<32}  {state:<7}  {_next_run(s)}")


@schedule.command("create")
@click.argument("task_id")
@click.option("--cron", default=None, help="When it fires, as cron: `0 9 * * 1-5` is 9:00 on weekdays.")
@click.option("--timezone", default=None, help="The cron's IANA timezone (default UTC), e.g. Europe/Paris.")
@click.option("--every", default=None, help="Or fire at an interval: 30s, 5m, 1h30m, 1d.")
@click.option("--input", "input_text", default=None, help="Each run's input, as JSON (or YAML).")
@click.option("--overlap", type=click.Choice(OVERLAPS), default=None, help="While a run is still going.")
@click.option("--catchup-window", default=None, help="How late a missed firing may still run (e.g. 10m).")
@click.option("--paused", is_flag=True, help="Create it paused.")
@_stack_options
def create_schedule(
    task_id: str,
    cron: str | None,
    timezone: str | None,
    every: str | None,
    input_text: str | None,
    overlap: str | None,
    catchup_window: str | None,
    paused: bool,
    data_dir: Path | None,
    url: str | None,
) -> None:
    """Schedule runs of a task (its current version) on a cron or an interval."""
    given = {"cron": cron, "timezone": timezone, "every": every, "overlap": overlap}
    body: JsonObject = {k: v for k, v in given.items() if v is not None}
    if catchup_window is not None:
        body["catchup_window"] = catchup_window
    if paused:
        body["paused"] = True
    if input_text is not None:
        try:
            body["input"] = parse_value(input_text)
        except ValueError as exc:
            raise click.ClickException(f"cannot read --input: {exc}") from None
    with _api(data_dir, url) as api:
        made = call(api, "POST", f"/tasks/{task_id}/schedules", json=body)
    click.echo(f"schedule {made['id']} of task {task_id}: {_when(made)}; next run {_next_run(made)}")
    click.echo(f"on the Temporal UI's Schedules page as {made['temporal_schedule_id']}")


def _changer(name: str, method: str, path: str, body: JsonObject | None, done: str) -> click.Command:
    """A command taking a schedule's id that makes one request and says what it did."""

    @_stack_options
    def command(schedule_id: str, data_dir: Path | None, url: str | None) -> None:
        with _api(data_dir, url) as api:
            call(api, method, path.format(id=schedule_id), json=body)
        click.echo(f"schedule {schedule_id} {done}")

    decorated = click.argument("schedule_id")(command)
    return click.command(name, help=f"{done.capitalize()}: the schedule given by its id.")(decorated)


schedule.add_command(_changer("pause", "PATCH", "/schedules/{id}", {"paused": True}, "paused"))
schedule.add_command(_changer("resume", "PATCH", "/schedules/{id}", {"paused": False}, "resumed"))
schedule.add_command(_changer("trigger", "POST", "/schedules/{id}/trigger", None, "triggered (one run now)"))
schedule.add_command(_changer("rm", "DELETE", "/schedules/{id}", None, "deleted"))


def _when(found: JsonObject) -> str:
    if found.get("every"):
        return f"every {found['every']}"
    return f"{found.get('cron')} ({found.get('timezone') or 'UTC'})"


def _next_run(found: JsonObject) -> str:
    runs = found.get("next_runs")
    if not isinstance(runs, list) or not runs:
        return "-"
    return f"{datetime.fromisoformat(str(runs[0]).replace('Z', '+00:00')).astimezone():%Y-%m-%d %H:%M:%S %Z}"
