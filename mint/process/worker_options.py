"""`mint worker`'s sizing flags: which task queues it polls and how much it runs at once. Each flag overrides
its MINT_WORKER_* variable (mint/settings.py); the README's "Sizing workers" says how to choose them."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import click

from mint.settings import Settings, parse_queue_kinds

_FLAGS = (
    click.option(
        "--queues",
        "worker_queues",
        default=None,
        help="Comma-separated: which queues to poll, of workflows, models, http, writes "
        "(MINT_WORKER_QUEUES; default all). models, http and writes need MINT_MODEL_QUEUE, MINT_HTTP_QUEUE, "
        "MINT_WRITE_QUEUE; without one, that kind runs with the workflows.",
    ),
    click.option(
        "--max-workflow-tasks",
        "worker_max_workflow_tasks",
        type=click.IntRange(min=1),
        default=None,
        help="Workflow tasks at once (MINT_WORKER_MAX_WORKFLOW_TASKS; default 100).",
    ),
    click.option(
        "--max-activities",
        "worker_max_activities",
        type=click.IntRange(min=1),
        default=None,
        help="Activities at once, per queue polled (MINT_WORKER_MAX_ACTIVITIES; default 1000).",
    ),
    click.option(
        "--max-local-activities",
        "worker_max_local_activities",
        type=click.IntRange(min=1),
        default=None,
        help="Calls run in the worker at once (MINT_WORKER_MAX_LOCAL_ACTIVITIES; default 1000).",
    ),
    click.option(
        "--max-model-calls",
        "worker_max_model_calls",
        type=click.IntRange(min=0),
        default=None,
        help="Model calls at once, within the above (MINT_WORKER_MAX_MODEL_CALLS; default 0: no cap of their own).",
    ),
)


def WORKER_SIZING(command: Callable[..., Any]) -> Callable[..., Any]:  # noqa: N802 - used as a decorator
    """The sizing flags, for `mint worker`."""
    for flag in reversed(_FLAGS):
        command = flag(command)
    return command


def sized(settings: Settings, flags: dict[str, Any]) -> Settings:
    """`settings` with the flags given, checked: a bad queue list stops the worker with a clear message."""
    given = {name: value for name, value in flags.items() if value is not None}
    try:
        if "worker_queues" in given:
            given["worker_queues"] = parse_queue_kinds(given["worker_queues"], "--queues")
        settings = dataclasses.replace(settings, **given)
        settings.polled_queues()
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    return settings
