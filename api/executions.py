"""Starting, resuming and cancelling executions: Postgres first, then Temporal."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.common import Priority, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from api.errors import ApiError
from api.workflow_labels import workflow_labels
from contracts.budgets import Budget
from contracts.executions import ExecutionParams, ResumeInput, ResumePoint
from contracts.liveness import WORKFLOW_TASK_TIMEOUT
from contracts.temporal import RESUME_SIGNAL, TASK_EXECUTION_WORKFLOW, tenant_priority
from contracts.transitions import TERMINAL_STATUSES
from infra.settings import Settings
from infra.store.budgets import Budgets
from infra.store.tables import AGENTS, EXECUTIONS, Conflict, Store
from infra.telemetry.tracing import execution_context
from services.handoffs import AGENT_VIEW_KEYS, reachable_agents
from workflows.input_schema import input_problems
from workflows.language import ToolDef

# Large inputs cross Temporal by reference (infra/temporal/claim_check.py); this bounds what a request may carry.
MAX_INPUT_BYTES = 32 * 1024 * 1024
# An input this small is checked against the task's input_schema on the event loop (a thread hop costs more).
INLINE_CHECK_BYTES = 16 * 1024


async def start_execution(
    store: Store,
    temporal: Client,
    settings: Settings,
    developer: str,
    task: dict[str, Any],
    body_input: Any,
    metadata: dict[str, Any],
    idempotency_key: str | None = None,
) -> dict[str, Any]:
    """Validate the input, insert the execution (`queued`), start its workflow; a failed start is recorded.

    With an idempotency key, a repeated request returns the execution the first one created."""
    await check_input(task["document"], body_input)
    if idempotency_key:
        existing = await store.execution_by_key(developer, task["id"], idempotency_key)
        if existing is not None:
            return await _replayed(store, temporal, settings, developer, task, existing, body_input)
    await check_in_flight(store, settings, developer)
    values = {
        "task_id": task["id"],
        "task_version": task["version"],
        "status": "queued",
        "input": body_input,
        "metadata": metadata,
        "idempotency_key": idempotency_key,
        "budget": await execution_budget(store, developer, task["document"]),
    }
    try:
        execution = await store.insert(EXECUTIONS, developer, values)
    except Conflict:  # a concurrent request with the same key won the insert
        existing = await store.execution_by_key(developer, task["id"], idempotency_key or "")
        if existing is None:
            raise
        return await _replayed(store, temporal, settings, developer, task, existing, body_input)
    await launch(store, temporal, settings, developer, task, execution)
    # Its workflow is started; the worker may already have moved the row on (that is what GET answers).
    return {**execution, "status": "starting"}


async def check_in_flight(store: Store, settings: Settings, developer: str) -> None:
    """A 429 when the developer has as many executions in flight as allowed."""
    in_flight = await store.executions_in_flight(developer)
    if in_flight >= settings.max_executions_in_flight:
        raise ApiError(
            429,
            f"{in_flight} executions are already in flight for this developer; the limit is "
            f"{settings.max_executions_in_flight} (MINT_MAX_EXECUTIONS_IN_FLIGHT): wait for some to end",
            headers={"Retry-After": "5"},
        )


async def execution_budget(store: Store, developer: str, document: dict[str, Any]) -> dict[str, Any] | None:
    """The limits an execution runs within, fixed when it starts: the task's `budget`, else the developer's
    default (GET/PUT /developer/settings); None when neither sets one."""
    if document.get("budget") is not None:
        return Budget.model_validate(document["budget"]).limits()
    return await Budgets(store.pool).default_budget(developer)


def check_storable(value: Any, what: str) -> int:
    """The JSON size of `value`; NaN and Infinity are refused (JSON and Postgres cannot hold them)."""
    try:
        return len(json.dumps(value, allow_nan=False))
    except ValueError:
        raise ApiError(422, f"{what} contains NaN or Infinity, which JSON cannot hold") from None


async def check_input(document: dict[str, Any], body_input: Any) -> None:
    size = check_storable(body_input, "input")
    if size > MAX_INPUT_BYTES:
        raise ApiError(413, f"execution input is {size} bytes; the limit is {MAX_INPUT_BYTES}")
    schema = document.get("input_schema")
    if schema is None:
        return
    # A big input against a schema takes a while, and the event loop serves everyone: a thread then.
    if size > INLINE_CHECK_BYTES:
        problems = await asyncio.to_thread(input_problems, schema, body_input)
    else:
        problems = input_problems(schema, body_input)
    if problems:
        summary = "; ".join(f"{p.path}: {p.message}" for p in problems[:5])
        raise ApiError(422, f"input does not match the task's input_schema: {summary}", problems)


async def _replayed(
    store: Store,
    temporal: Client,
    settings: Settings,
    developer: str,
    task: dict[str, Any],
    existing: dict[str, Any],
    body_input: Any,
) -> dict[str, Any]:
    if existing["input"] != body_input:
        raise ApiError(409, "this Idempotency-Key was already used with a different input")
    if existing["status"] == "queued":
        # The first request stopped between its insert and its start: finish the job (starts are idempotent),
        # with the task version that execution recorded.
        task = await store.get_task(developer, task["id"], existing["task_version"]) or task
        await launch(store, temporal, settings, developer, task, existing)
        existing = await store.get(EXECUTIONS, developer, existing["id"]) or existing
    return existing


async def launch(
    store: Store,
    temporal: Client,
    settings: Settings,
    developer: str,
    task: dict[str, Any],
    execution: dict[str, Any],
    resume: ResumePoint | None = None,
) -> None:
    """Start the workflow (id = execution id); a start that fails leaves a `failed` execution saying why.
    With `resume` (a restart), the interpreter picks up there instead of at main's first step."""
    agent, tools = await asyncio.gather(
        store.get(AGENTS, developer, task["agent_id"]), _task_tools(store, developer, task, task["document"])
    )
    # The agents it may be handed to are read now, so a handoff in the workflow is deterministic.
    handoff_agents = await reachable_agents(store, developer, agent or {})  # no handoffs: no reads
    params = _params(settings, developer, task, execution, agent or {}, tools, resume, handoff_agents)
    with_attributes = settings.search_attributes == "on"  # `auto` was resolved when the API started
    labels = workflow_labels(task, agent or {}, developer, execution["id"], with_attributes)
    try:
        with execution_context(execution["id"]):  # Temporal's spans join the execution's trace
            await temporal.start_workflow(
                TASK_EXECUTION_WORKFLOW,
                params,
                id=execution["id"],
                task_queue=settings.task_queue,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                # What the Temporal UI shows of it (api/workflow_labels.py), in this same request.
                static_summary=labels.summary,
                static_details=labels.details,
                search_attributes=labels.search_attributes,
                # Where a worker shares this client (`mint up`), its first task comes back with the start.
                request_eager_start=True,
                task_timeout=WORKFLOW_TASK_TIMEOUT,  # a lost worker costs seconds (contracts/liveness.py)
                # Fairness between developers on the task queue (MINT_FAIRNESS; contracts/temporal.py).
                priority=tenant_priority(developer) if settings.fairness else Priority.default,
            )
    except WorkflowAlreadyStartedError:
        pass  # started by an earlier attempt
    except Exception as exc:
        # Any other failure must leave a visible `failed` execution, never a silent `queued`.
        error = f"could not start the workflow: {exc}"
        await store.set_execution_status(developer, execution["id"], "failed", ("queued",), error=error)
        raise ApiError(503, f"could not start execution {execution['id']}: {exc}") from None
    await store.mark_started(developer, execution["id"])


def _params(
    settings: Settings,
    developer: str,
    task: dict[str, Any],
    execution: dict[str, Any],
    agent: dict[str, Any],
    tools: list[dict[str, Any]],
    resume: ResumePoint | None,
    handoff_agents: dict[str, dict[str, Any]],
) -> ExecutionParams:
    """What the execution's workflow runs with (from `resume` on, for a restart)."""
    document = task["document"]
    return ExecutionParams(
        execution_id=execution["id"],
        developer_id=developer,
        task=document,
        dialect=task["dialect"],
        input=execution["input"],
        agent=_agent_view(agent),
        tools=tools,
        task_info={
            "id": task["id"],
            "name": document["name"],
            "version": task["version"],
            "metadata": document.get("metadata", {}),
        },
        execution_info={"id": execution["id"], "metadata": execution["metadata"]},
        null_text="",
        max_history_events=settings.max_history_events,
        max_fan_out=settings.max_fan_out,
        max_tool_timeout=settings.max_tool_timeout,
        resume=resume,
        handoff_agents=handoff_agents,
        queues=settings.activity_queues(),
    )


async def resume_execution(
    store: Store, temporal: Client, developer: str, execution: dict[str, Any], value: Any
) -> None:
    """Answer the oldest unanswered wait; the workflow drops a resume for a wait that is no longer open."""
    if execution["status"] != "awaiting_input":
        raise ApiError(409, f"execution {execution['id']} is {execution['status']}, not awaiting_input")
    if check_storable(value, "input") > MAX_INPUT_BYTES:
        raise ApiError(413, f"resume input is over {MAX_INPUT_BYTES} bytes")
    wait_seq = await store.open_wait(developer, execution["id"])
    if wait_seq is None:
        raise ApiError(409, f"execution {execution['id']} is not waiting for input")
    try:
        await _handle(temporal, execution).signal(RESUME_SIGNAL, ResumeInput(wait_seq=wait_seq, input=value))
    except RPCError as exc:
        raise ApiError(409, f"execution {execution['id']} cannot be resumed: {exc.message}") from None


async def cancel_execution(
    store: Store, temporal: Client, developer: str, execution: dict[str, Any], reason: str | None
) -> None:
    if execution["status"] in TERMINAL_STATUSES:
        raise ApiError(409, f"execution {execution['id']} already ended ({execution['status']})")
    try:
        await _handle(temporal, execution).cancel()
    except RPCError as exc:
        if exc.status != RPCStatusCode.NOT_FOUND:
            raise ApiError(503, f"could not cancel execution {execution['id']}: {exc.message}") from None
        # No workflow (its start failed): nothing runs, so the row is the whole truth.
        await store.set_execution_status(developer, execution["id"], "cancelled", ("queued", "starting"))
    if reason:
        await store.note_cancel_reason(developer, execution["id"], reason)


def _handle(temporal: Client, execution: dict[str, Any]) -> WorkflowHandle:
    return temporal.get_workflow_handle(execution["id"])


def _agent_view(agent: dict[str, Any]) -> dict[str, Any]:
    view = {k: agent.get(k) for k in AGENT_VIEW_KEYS}
    # Only when set: an execution's input is as before for an agent without handoffs or guardrails.
    if not view["handoffs"]:
        del view["handoffs"]
    if agent.get("guardrails"):
        view["guardrails"] = agent["guardrails"]
    return view


async def _task_tools(
    store: Store, developer: str, task: dict[str, Any], document: dict[str, Any]
) -> list[dict[str, Any]]:
    """The task's own tools, then (with inherit_tools) the agent's tools it does not override."""
    tools = [
        ToolDef.model_validate(t).model_dump(mode="json", by_alias=True) for t in document.get("tools", [])
    ]
    if document.get("inherit_tools", True):
        names = {t["name"] for t in tools}
        tools += [
            t["spec"]
            for t in await store.agent_tools(developer, task["agent_id"])
            if t["spec"]["name"] not in names
        ]
    return tools
