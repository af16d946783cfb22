"""What the client commands share: calling the API with its errors said once, in plain lines, and reading a
value a person typed (JSON, or YAML, which also reads `approved: true`)."""

from __future__ import annotations

import json
from typing import Any

import click
import httpx
import yaml

from contracts.json import JsonObject, JsonValue
from process.stack_file import MintApi


def call(api: MintApi, method: str, path: str, **kwargs: Any) -> JsonObject:
    """The JSON object one request answers; an error answer ends the command with the API's words."""
    response = api.request(method, path, **kwargs)
    if response.status_code >= 400:
        raise api_error(api, response)
    body = response.json()
    if not isinstance(body, dict):
        raise click.ClickException(
            f"{method} {path} answered {type(body).__name__}, not a JSON object, from {api.stack.where()}"
        )
    return body


def api_error(api: MintApi, response: httpx.Response) -> click.ClickException:
    """The error `response` says, naming the API that said it (and how the command found that API)."""
    first, *problems = error_text(response).split("\n")
    return click.ClickException("\n".join([f"{first}, from {api.stack.where()}", *problems]))


def as_object(value: JsonValue) -> JsonObject:
    """`value` if it is a JSON object, else an empty one (for a field that may be null or missing)."""
    return value if isinstance(value, dict) else {}


def items(answer: JsonObject) -> list[JsonObject]:
    """The objects of a list answer (`{"items": [...]}`)."""
    found = answer.get("items")
    return [item for item in found if isinstance(item, dict)] if isinstance(found, list) else []


def error_text(response: httpx.Response) -> str:
    """The API's error sentence, then each problem once on a line of its own with its path."""
    try:
        body = response.json()
    except ValueError:
        body = {"error": response.text}
    if not isinstance(body, dict):
        body = {"error": str(body)}
    error = body.get("error")
    error = error if isinstance(error, dict) else {"message": error}  # Mint's shape is Julep's: a dict
    problems = [f"{p.get('loc')}: {p.get('msg')}" for p in error.get("details") or [] if isinstance(p, dict)]
    message = str(error.get("message") or body.get("detail") or response.reason_phrase)
    # The sentence may list the problems itself ("invalid task: main[0].x: ...; main[1]: ..."), which the
    # lines below say again: keep only what comes before them.
    if problems and problems[0] in message:
        message = message[: message.index(problems[0])].rstrip(" :;") or "invalid request"
    return "\n".join([f"{message} (HTTP {response.status_code})", *(f"  {p}" for p in problems)])


def parse_value(text: str) -> Any:
    """A value typed by a person: JSON, or else YAML (`approved: true` is {"approved": true}); ValueError
    says why neither reads it."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        # JSON first: PyYAML reads some JSON differently (`1e3` is a string to it).
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"not JSON or YAML: {_yaml_problem(exc)}") from None


def _yaml_problem(exc: yaml.YAMLError) -> str:
    problem = getattr(exc, "problem", None)
    mark = getattr(exc, "problem_mark", None)
    if problem and mark is not None:
        return f"{problem} (line {mark.line + 1}, column {mark.column + 1})"
    return str(exc).replace("\n", " ")
