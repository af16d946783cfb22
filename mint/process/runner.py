"""`mint run FILE.yaml`: create or update the task, start an execution, show progress, answer waits."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import click
import httpx
import yaml

from mint.process.stack_file import StackAddress, api_client

TERMINAL = {"succeeded": 0, "failed": 1, "cancelled": 2}


def run_task_file(base_url: str, key: str, file: Path, input_json: str | None, agent_name: str) -> int:
    """Run the task in `file`; return the process exit code (0 only for `succeeded`)."""
    try:
        document = yaml.safe_load(file.read_text())
        task_input = json.loads(input_json) if input_json else {}
    except (yaml.YAMLError, ValueError) as exc:
        raise click.ClickException(f"cannot read {file} or --input: {exc}") from None
    with api_client(StackAddress(base_url, key)) as api:
        agent = _find_or_create_agent(api, agent_name)
        task = _save_task(api, agent["id"], document)
        _print_warnings(task)
        execution = _call(api, "POST", f"/tasks/{task['id']}/executions", json={"input": task_input})
        click.echo(f"execution {execution['id']} of task {task['name']!r} (version {task['version']})")
        return _follow(api, execution["id"])


def _call(api: httpx.Client, method: str, path: str, **kwargs: Any) -> Any:
    response = api.request(method, path, **kwargs)
    if response.status_code >= 400:
        try:
            body = response.json()
        except ValueError:
            body = {"error": response.text}
        problems = "".join(f"\n  {p['path']}: {p['message']}" for p in body.get("problems", []))
        raise click.ClickException(
            f"{method} {path} -> {response.status_code}: {body.get('error')}{problems}"
        )
    return response.json()


def _find_or_create_agent(api: httpx.Client, name: str) -> dict[str, Any]:
    for agent in _call(api, "GET", "/agents", params={"limit": 1000})["items"]:
        if agent["name"] == name:
            return agent
    return _call(api, "POST", "/agents", json={"name": name})


def _save_task(api: httpx.Client, agent_id: str, document: Any) -> dict[str, Any]:
    name = document.get("name") if isinstance(document, dict) else None
    existing = [
        t
        for t in _call(api, "GET", f"/agents/{agent_id}/tasks", params={"limit": 1000})["items"]
        if t["name"] == name
    ]
    path = f"/agents/{agent_id}/tasks" + (f"/{existing[0]['id']}" if existing else "")
    return _call(api, "POST", path, json=document)


def _print_warnings(task: dict[str, Any]) -> None:
    """How the task's ambiguous strings were read, and the keys ignored: said before it runs."""
    for warning in task.get("warnings") or []:
        click.echo(f"warning: {warning['path']}: {warning['message']}", err=True)


def _follow(api: httpx.Client, execution_id: str) -> int:
    seen = 0
    spinner = "|/-\\"
    tick = 0
    while True:
        transitions = _call(
            api,
            "GET",
            f"/executions/{execution_id}/transitions",
            params={"direction": "asc", "limit": 1000, "offset": seen},
        )["items"]
        for transition in transitions:
            seen += 1
            _print_transition(transition)
            if transition["type"] == "wait":
                _answer(api, execution_id, transition["output"])
        execution = _call(api, "GET", f"/executions/{execution_id}")
        if execution["status"] in TERMINAL and execution["transition_count"] <= seen:
            click.echo(f"\r{execution['status']}")
            if execution["status"] == "succeeded":
                click.echo(json.dumps(execution["output"], indent=2))
            elif execution.get("error"):
                click.echo(f"error: {execution['error']}", err=True)
            return TERMINAL[execution["status"]]
        if sys.stdout.isatty():
            click.echo(f"\r{spinner[tick % 4]} {execution['status']}", nl=False)
        tick += 1
        time.sleep(0.2)


def _print_transition(transition: dict[str, Any]) -> None:
    current = transition["current"]
    where = f"{current['workflow']}[{current['step']}]"
    label = f" ({transition['step_label']})" if transition.get("step_label") else ""
    output = json.dumps(transition["output"])
    click.echo(f"\r{transition['type']:<13} {where}{label} {output[:200]}")


def _answer(api: httpx.Client, execution_id: str, output: Any) -> None:
    """Prompt on the terminal for the waiting step's input (JSON, or plain text)."""
    click.echo(f"waiting for input: {json.dumps(output)}")
    text = click.prompt("input (JSON)", default="{}")
    try:
        value = json.loads(text)
    except ValueError:
        value = text
    _call(api, "PUT", f"/executions/{execution_id}", json={"status": "running", "input": value})
