"""Starting an execution's workflow, with everything it runs with read now: the task version, its agent and
tools, and the agents it may be handed to."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine

from temporalio.client import Client
from temporalio.common import Priority, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

from contracts.executions import ExecutionParams, ResumePoint
from contracts.json import JsonObject
from contracts.liveness import WORKFLOW_TASK_TIMEOUT
from contracts.records.agents import Agent
from contracts.records.executions import Execution
from contracts.records.tasks import TaskVersion
from contracts.temporal import TASK_EXECUTION_WORKFLOW, tenant_priority
from infra.settings import Settings
from infra.store.tables import AGENTS, Store
from infra.telemetry.tracing import execution_context
from services.errors import Unavailable
from services.handoffs import AGENT_VIEW_KEYS, agent_view, reachable_agents
from services.workflow_labels import workflow_labels
from workflows.execution import CURRENT_PATCHES
from workflows.language import ToolDef

log = logging.getLogger(__name__)


async def launch(
    store: Store,
    temporal: Client,
    settings: Settings,
    developer: str,
    task: TaskVersion,
    execution: Execution,
    resume: ResumePoint | None = None,
    read: LaunchReads | None = None,
) -> None:
    """Start the workflow (id = execution id); a start that fails leaves a `failed` execution saying why.
    With `resume` (a restart), the interpreter picks up there instead of at main's first step. `read`: what
    launch_reads answered, when the caller read it already."""
    agent, tools = read or await launch_reads(store, developer, task)
    # The agents it may be handed to are read now, so a handoff in the workflow is deterministic.
    handoff_agents = {} if agent is None else await reachable_agents(store, developer, agent)
    view = _agent_view(agent)
    params = _params(settings, developer, task, execution, view, tools, resume, handoff_agents)
    params.callback_url = execution.callback_url
    with_attributes = settings.search_attributes == "on"  # `auto` was resolved when the API started
    labels = workflow_labels(task, agent, developer, execution.id, with_attributes)
    try:
        with execution_context(execution.id):  # Temporal's spans join the execution's trace
            await temporal.start_workflow(
                TASK_EXECUTION_WORKFLOW,
                params,
                id=execution.id,
                task_queue=settings.task_queue,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                # What the Temporal UI shows of it (services/workflow_labels.py), in this same request.
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
        await store.set_execution_status(developer, execution.id, "failed", ("queued",), error=error)
        raise Unavailable(f"could not start execution {execution.id}: {exc}") from None
    # `queued` -> `starting` after the answer, not before it: the reconciler treats both alike, and the
    # worker's first write moves the row on anyway.
    _after_answer(store.mark_started(developer, execution.id))


LaunchReads = tuple[Agent | None, list[JsonObject]]
_pending: set[asyncio.Task[None]] = set()  # held until done (the loop keeps only weak references)


async def launch_reads(store: Store, developer: str, task: TaskVersion) -> LaunchReads:
    """The task's agent and its tools, what launch reads (a start reads them while it writes its row)."""
    agent, tools = await asyncio.gather(
        store.get(AGENTS, developer, task.agent_id), _task_tools(store, developer, task)
    )
    return agent, tools


def _after_answer(write: Coroutine[None, None, None]) -> None:
    task = asyncio.create_task(write)
    _pending.add(task)
    task.add_done_callback(_written)


def _written(task: asyncio.Task[None]) -> None:
    _pending.discard(task)
    if not task.cancelled() and (error := task.exception()) is not None:
        log.warning("an execution stays `queued` (the reconciler treats it alike): %s", error)


def _params(
    settings: Settings,
    developer: str,
    task: TaskVersion,
    execution: Execution,
    agent: JsonObject,
    tools: list[JsonObject],
    resume: ResumePoint | None,
    handoff_agents: dict[str, JsonObject],
) -> ExecutionParams:
    """What the execution's workflow runs with (from `resume` on, for a restart)."""
    return ExecutionParams(
        execution_id=execution.id,
        developer_id=developer,
        task=task.document,
        dialect=task.dialect,
        input=execution.input,
        agent=agent,
        tools=tools,
        task_info={
            "id": task.id,
            "name": task.document["name"],
            "version": task.version,
            "metadata": task.document.get("metadata", {}),
        },
        execution_info={"id": execution.id, "metadata": execution.metadata},
        null_text="",
        patches=list(CURRENT_PATCHES),
        max_history_events=settings.max_history_events,
        max_fan_out=settings.max_fan_out,
        max_tool_timeout=settings.max_tool_timeout,
        resume=resume,
        handoff_agents=handoff_agents,
        queues=settings.activity_queues(),
    )


def task_callback_url(task: TaskVersion) -> str | None:
    """The task's callback_url: the default of its executions."""
    url = task.document.get("callback_url")
    return url if isinstance(url, str) else None


def _agent_view(agent: Agent | None) -> JsonObject:
    """What the execution knows of its agent, as stored (one deleted meanwhile: nothing, each key null)."""
    if agent is None:
        return {key: None for key in AGENT_VIEW_KEYS if key != "handoffs"}
    view = agent_view(agent)
    # Only when set: an execution's input is as before for an agent without handoffs or guardrails.
    if not agent.handoffs:
        del view["handoffs"]
    if agent.guardrails:
        view["guardrails"] = agent.guardrails
    return view


async def _task_tools(store: Store, developer: str, task: TaskVersion) -> list[JsonObject]:
    """The task's own tools, then (with inherit_tools) the agent's tools it does not override."""
    own = task.document.get("tools")
    tools = [
        ToolDef.model_validate(t).model_dump(mode="json", by_alias=True)
        for t in (own if isinstance(own, list) else [])
    ]
    if task.document.get("inherit_tools", True):
        names = {t["name"] for t in tools}
        tools += [t.spec for t in await store.agent_tools(developer, task.agent_id) if t.name not in names]
    return tools
