"""Restarting an execution: a new execution that keeps the original's transitions before a step and runs again
from that step (services/restart_plan.py works out where), linked by `restarted_from`."""

from __future__ import annotations

from contracts.executions import ResumePoint
from contracts.json import JsonValue
from contracts.records.executions import Execution
from infra.settings import Settings
from infra.store.restarts import create_restarted, transitions_through
from services.clients import Clients
from services.errors import Invalid, NotFound, TooLarge
from services.executions.launch import launch
from services.executions.reads import execution_of
from services.executions.start import (
    MAX_INPUT_BYTES,
    check_in_flight,
    check_input,
    check_storable,
    execution_budget,
)
from services.ids import checked_id
from services.restart_plan import CannotRestart, plan_restart


async def restart_execution(
    clients: Clients,
    settings: Settings,
    developer: str,
    execution_id: str,
    from_transition: str,
    new_input: JsonValue,
    has_input: bool,
) -> Execution:
    """Create and start the restarted execution; NotFound for a transition the execution does not have,
    Invalid for one no step can be restarted from."""
    store = clients.store
    original = await execution_of(clients, developer, execution_id)
    from_transition = checked_id(from_transition, "transition")
    if has_input and check_storable(new_input, "input") > MAX_INPUT_BYTES:
        raise TooLarge(f"restart input is over {MAX_INPUT_BYTES} bytes")
    task = await store.get_task(developer, original.task_id, original.task_version)  # the one it ran
    if task is None:
        raise NotFound("task", original.task_id)
    transitions = await transitions_through(store.pool, developer, original.id, from_transition)
    if not transitions:
        raise NotFound("transition", from_transition)
    try:
        plan = plan_restart(task.document, transitions, from_transition, new_input, has_input)
    except CannotRestart as exc:
        raise Invalid(
            f"cannot restart execution {original.id} from transition {from_transition}: {exc}"
        ) from None
    if has_input and plan.index == 0:
        await check_input(task.document, new_input)  # it is the execution's input
    await check_in_flight(clients, settings, developer)
    budget = await execution_budget(clients, developer, task.document)
    # From main's first step nothing is kept: a fresh start (with the new input, if any).
    keep = plan.keep if plan.index else []
    execution = await create_restarted(store.pool, developer, original, plan.frame["inputs"][0], budget, keep)
    resume = None
    if plan.index:
        resume = ResumePoint(
            frame=plan.frame,
            index=plan.index,
            seq=keep[-1].seq,
            state=plan.state,
            labels=plan.labels,
            legacy=False,
            new_input=has_input,  # the input guardrails check it, as they check an execution's input
        )
    await launch(store, clients.temporal, settings, developer, task, execution, resume)
    return execution.moved_to("starting")
