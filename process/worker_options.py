"""`mint worker`'s sizing flags: which task queues it polls and how much it runs at once. Each flag overrides
its MINT_WORKER_* variable (infra/settings/); docs/operations.md ("Sizing workers") says how to choose them."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import click

from infra.settings import Settings
from infra.settings.parsers import MAX_WORKER_SLOTS, parse_queue_kinds


def _count(flag: str, setting: str, minimum: int, what: str) -> Callable[..., Any]:
    """A flag for the number `setting` (its variable MINT_<SETTING>; its default, Settings')."""
    default = getattr(Settings, setting)
    return click.option(
        flag,
        setting,
        type=click.IntRange(min=minimum, max=MAX_WORKER_SLOTS),
        default=None,
        help=f"{what} (MINT_{setting.upper()}; default {default}).",
    )


_FLAGS = (
    click.option(
        "--queues",
        "worker_queues",
        default=None,
        help="Comma-separated: which queues to poll, of workflows, models, http, writes "
        "(MINT_WORKER_QUEUES; default all). models, http and writes need MINT_MODEL_QUEUE, MINT_HTTP_QUEUE, "
        "MINT_WRITE_QUEUE; without one, that kind runs with the workflows.",
    ),
    _count("--max-workflow-tasks", "worker_max_workflow_tasks", 1, "Workflow tasks computed at once"),
    _count("--max-activities", "worker_max_activities", 1, "Activities at once, per queue polled"),
    _count("--max-local-activities", "worker_max_local_activities", 1, "Calls run in the worker at once"),
    _count(
        "--max-model-calls",
        "worker_max_model_calls",
        0,
        "Model calls at once, within the above (0: no cap of their own)",
    ),
)


def WORKER_SIZING(command: Callable[..., Any]) -> Callable[..., Any]:  # noqa: N802 - used as a decorator
    """The sizing flags, for `mint worker`."""
    for flag in reversed(_FLAGS):
        command = flag(command)
    return command


def sized(settings: Settings, flags: Mapping[str, object]) -> Settings:
    """`settings` with the flags given (None: not given), checked: a bad queue list stops the worker with a
    clear message."""
    queues = flags.get("worker_queues")
    try:
        if isinstance(queues, str):
            settings = dataclasses.replace(settings, worker_queues=parse_queue_kinds(queues, "--queues"))
        settings = dataclasses.replace(
            settings,
            worker_max_workflow_tasks=_number(
                flags, "worker_max_workflow_tasks", settings.worker_max_workflow_tasks
            ),
            worker_max_activities=_number(flags, "worker_max_activities", settings.worker_max_activities),
            worker_max_local_activities=_number(
                flags, "worker_max_local_activities", settings.worker_max_local_activities
            ),
            worker_max_model_calls=_number(flags, "worker_max_model_calls", settings.worker_max_model_calls),
        )
        settings.polled_queues()
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    return settings


def _number(flags: Mapping[str, object], name: str, unset: int) -> int:
    value = flags.get(name)
    return value if isinstance(value, int) else unset
