"""`mint run FILE.yaml`: create or update the task, start an execution, show progress, answer waits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import httpx
import yaml

from process.api_calls import call, parse_value
from process.follow import INTERRUPTED, Detached, follow, say_detached
from process.stack_file import StackAddress, api_client


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
            return INTERRUPTED
        try:
            return follow(api, execution_id, answer_waits=True)
        except Detached as detached:
            say_detached(api, execution_id, detached.reason)
            return detached.code


def _start(api: httpx.Client, document: Any, task_input: Any, agent_name: str) -> str:
    agent = _find_or_create_agent(api, agent_name)
    task = _save_task(api, agent["id"], document)
    _print_warnings(task)
    execution = call(api, "POST", f"/tasks/{task['id']}/executions", json={"input": task_input})
    click.echo(f"execution {execution['id']} of task {task['name']!r} (version {task['version']})")
    return execution["id"]


def _find_or_create_agent(api: httpx.Client, name: str) -> dict[str, Any]:
    for agent in call(api, "GET", "/agents", params={"limit": 1000})["items"]:
        if agent["name"] == name:
            return agent
    return call(api, "POST", "/agents", json={"name": name})


def _save_task(api: httpx.Client, agent_id: str, document: Any) -> dict[str, Any]:
    """Create the task, or update the agent's task of the same name (the API keeps its version when the
    document did not change)."""
    name = document.get("name") if isinstance(document, dict) else None
    existing = [
        t
        for t in call(api, "GET", f"/agents/{agent_id}/tasks", params={"limit": 1000})["items"]
        if t["name"] == name
    ]
    path = f"/agents/{agent_id}/tasks" + (f"/{existing[0]['id']}" if existing else "")
    return call(api, "POST", path, json=document, params={"warnings": "true"})  # said before it runs


def _print_warnings(task: dict[str, Any]) -> None:
    """How the task's ambiguous strings were read, and the keys ignored: said before it runs."""
    for warning in task.get("warnings") or []:
        click.echo(f"warning: {warning['path']}: {warning['message']}", err=True)
