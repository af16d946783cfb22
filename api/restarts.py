"""POST /executions/{id}/restart: a new execution that keeps the original's transitions before a step and
runs again from that step (services/restart_plan.py works out where), linked by `restarted_from`."""

from __future__ import annotations

from typing import Any

from temporalio.client import Client

from api.errors import ApiError, not_found
from api.executions import (
    MAX_INPUT_BYTES,
    check_in_flight,
    check_input,
    check_storable,
    execution_budget,
    launch,
)
from contracts.executions import ResumePoint
from infra.settings import Settings
from infra.store.restarts import create_restarted, transitions_through
from infra.store.tables import Store
from services.restart_plan import CannotRestart, plan_restart


async def restart_execution(
    store: Store,
    temporal: Client,
    settings: Settings,
    developer: str,
    original: dict[str, Any],
    from_transition: str,
    new_input: Any,
    has_input: bool,
) -> dict[str, Any]:
    """Create and start the restarted execution; 404 for a transition the execution does not have, 422 for
    one no step can be restarted from."""
    if has_input and check_storable(new_input, "input") > MAX_INPUT_BYTES:
        raise ApiError(413, f"restart input is over {MAX_INPUT_BYTES} bytes")
    task = await store.get_task(developer, original["task_id"], original["task_version"])
    if task is None:
        raise not_found("task", original["task_id"])
    task = {**task, "version": original["task_version"]}  # the version the original ran, not the latest
    rows = await transitions_through(store.pool, developer, original["id"], from_transition)
    if not rows:
        raise not_found("transition", from_transition)
    try:
        plan = plan_restart(task["document"], rows, from_transition, new_input, has_input)
    except CannotRestart as exc:
        message = f"cannot restart execution {original['id']} from transition {from_transition}: {exc}"
        raise ApiError(422, message) from None
    if has_input and plan.index == 0:
        await check_input(task["document"], new_input)  # it is the execution's input
    await check_in_flight(store, settings, developer)
    execution_input = plan.frame["inputs"][0]
    values = {
        "task_id": original["task_id"],
        "task_version": original["task_version"],
        "input": execution_input,
        "metadata": original["metadata"],
        "budget": await execution_budget(store, developer, task["document"]),
        "restarted_from": original["id"],
    }
    # From main's first step nothing is kept: a fresh start (with the new input, if any).
    keep = plan.keep if plan.index else []
    execution = await create_restarted(store.pool, developer, values, keep)
    resume = None
    if plan.index:
        resume = ResumePoint(
            frame=plan.frame,
            index=plan.index,
            seq=keep[-1]["seq"],
            state=plan.state,
            labels=plan.labels,
            legacy=False,
            new_input=has_input,  # the input guardrails check it, as they check an execution's input
        )
    await launch(store, temporal, settings, developer, task, execution, resume)
    return {**execution, "status": "starting"}
