"""`mint run FILE.yaml`: create or update the task, start an execution, show progress, answer waits."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import yaml

from contracts.json import JsonObject, JsonValue
from process.api_calls import call, items, parse_value
from process.exit_codes import ExitCode
from process.follow import follow
from process.stack_file import MintApi, StackAddress, api_client


def run_task_file(stack: StackAddress, file: Path, input_text: str | None, agent_name: str) -> int:
    """Run the task in `file`; return the process exit code (0 only for `succeeded`, 130 after Ctrl-C)."""
    try:
        document = yaml.safe_load(file.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise click.ClickException(f"cannot read {file}: {exc}") from None
    try:
        task_input = parse_value(input_text) if input_text else {}
    except ValueError as exc:
        raise click.ClickException(f"cannot read --input: {exc}") from None
    with api_client(stack) as api:
        try:
            execution_id = _start(api, document, task_input, agent_name)
        except KeyboardInterrupt:
            click.echo("\nstopped: no execution was started.", err=True)
            return ExitCode.INTERRUPTED
        return follow(api, execution_id, answer_waits=True)


@dataclass(frozen=True)
class _SavedTask:
    """What `mint run` shows of the task it saved."""

    id: str
    name: str
    version: str
    warnings: list[str]  # how its ambiguous strings were read, and the keys ignored


def _start(api: MintApi, document: Any, task_input: JsonValue, agent_name: str) -> str:
    task = _save_task(api, _agent_id(api, agent_name), document)
    for warning in task.warnings:  # said before it runs
        click.echo(f"warning: {warning}", err=True)
    execution = call(api, "POST", f"/tasks/{task.id}/executions", json={"input": task_input})
    click.echo(f"execution {execution['id']} of task {task.name!r} (version {task.version})")
    return str(execution["id"])


def _agent_id(api: MintApi, name: str) -> str:
    """The agent called `name`, created if there is none."""
    for agent in items(call(api, "GET", "/agents", params={"limit": 1000})):
        if agent.get("name") == name:
            return str(agent["id"])
    return str(call(api, "POST", "/agents", json={"name": name})["id"])


def _save_task(api: MintApi, agent_id: str, document: Any) -> _SavedTask:
    """Create the task, or update the agent's task of the same name (the API keeps its version when the
    document did not change)."""
    name = document.get("name") if isinstance(document, dict) else None
    existing = [
        t
        for t in items(call(api, "GET", f"/agents/{agent_id}/tasks", params={"limit": 1000}))
        if t.get("name") == name
    ]
    path = f"/agents/{agent_id}/tasks" + (f"/{existing[0]['id']}" if existing else "")
    task = call(api, "POST", path, json=document, params={"warnings": "true"})
    warnings = task.get("warnings")
    return _SavedTask(
        str(task["id"]),
        str(task["name"]),
        str(task["version"]),
        _grouped([w for w in (warnings if isinstance(warnings, list) else []) if isinstance(w, dict)]),
    )


def _grouped(warnings: list[JsonObject]) -> list[str]:
    """One line per message, naming every path it applies to: a task in the seed dialect gets the same
    explanation for each string it reads as Python, said once."""
    paths: dict[str, list[str]] = {}
    for warning in warnings:
        paths.setdefault(str(warning.get("message")), []).append(str(warning.get("path")))
    return [f"{', '.join(where)}: {message}" for message, where in paths.items()]
