"""The Mint worker: the workflows and activities it runs, and how (the sandbox, concurrency, stopping). The
activities come built, their clients injected, from the composition root (mint/process/stack.py), which
`mint worker` and `mint up` run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from temporalio.client import Client
from temporalio.worker import Interceptor, Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from activities.docs import DocActivities
from activities.http import HttpActivities
from activities.integrations import IntegrationActivities
from activities.mcp import McpActivities
from activities.models import ModelActivities
from activities.sessions import SessionActivities
from activities.system import SystemActivities
from activities.tenant_limits import DeveloperLimiter, TenantLimits
from activities.transitions import TransitionWriter
from activities.worker_calls import WorkerCalls
from contracts.temporal import CALL_API, CALL_INTEGRATION, CALL_MCP, CALL_MODEL, CALL_SYSTEM, SEARCH_DOCS
from mint.settings import Settings
from workflows.docs import IndexDocWorkflow
from workflows.execution import MapChunkWorkflow, TaskExecutionWorkflow
from workflows.sessions import CompressSessionWorkflow
from workflows.tools import RunToolWorkflow

# Pure, deterministic modules the workflow sandbox may share instead of re-importing for every run. With
# only these shared (the strict sandbox), the interpreter and the workflow classes are re-imported inside the
# sandbox for every run, so it catches nondeterminism in them (a clock, randomness, I/O).
PASSTHROUGH_MODULES = (
    "simpleeval",
    "jinja2",
    "markupsafe",
    "pydantic",
    "pydantic_core",
    "yaml",
    "jsonschema",
    "workflows.language",
    "workflows.sandbox",
    "re2",
    "workflows.values",
    "workflows.prompts",
    "contracts",  # the payload types: shared, so a payload decoded outside the sandbox is the class inside
    # Temporal's tracing interceptor (mint/telemetry/tracing.py) works with the one OpenTelemetry context of
    # the process, not a copy re-imported per run.
    "opentelemetry",
)


def workflow_runner(strict: bool = False) -> SandboxedWorkflowRunner:
    """The sandbox the worker runs workflows in: it shares the whole workflows package too, because
    re-importing the interpreter cost about 190 ms of CPU for every new run (every execution, every fan-out
    chunk): replaying a short history took 200 ms of CPU, 13 ms with the package shared. The tests run the
    strict sandbox (tests/unit/test_worker_sandbox.py, tests/test_replay.py), so the sandbox still checks the
    interpreter for nondeterminism; shared, it must keep no state between runs at module level."""
    shared = PASSTHROUGH_MODULES if strict else (*PASSTHROUGH_MODULES, "workflows")
    return SandboxedWorkflowRunner(restrictions=SandboxRestrictions.default.with_passthrough_modules(*shared))


@dataclass(frozen=True)
class WorkerActivities:
    """The worker's activity objects, each built with its clients by the composition root."""

    writer: TransitionWriter
    tools: HttpActivities
    models: ModelActivities
    system: SystemActivities
    mcp: McpActivities
    integrations: IntegrationActivities
    docs: DocActivities
    sessions: SessionActivities


def build_worker(
    client: Client,
    activities: WorkerActivities,
    settings: Settings,
    interceptors: Sequence[Interceptor] = (),
) -> Worker:
    """A worker with every workflow and activity registered (and `interceptors`: activities/observe.py)."""
    a = activities
    in_worker = WorkerCalls(
        a.writer,
        {
            CALL_MODEL: a.models.call_model,
            CALL_API: a.tools.call_api,
            CALL_SYSTEM: a.system.call_system,
            CALL_MCP: a.mcp.call_mcp,
            CALL_INTEGRATION: a.integrations.call_integration,
            SEARCH_DOCS: a.docs.search_docs,
        },
    )
    return Worker(
        client,
        task_queue=settings.task_queue,
        workflows=[
            TaskExecutionWorkflow,
            MapChunkWorkflow,
            IndexDocWorkflow,
            CompressSessionWorkflow,
            RunToolWorkflow,
        ],
        activities=[
            a.docs.index_doc,
            a.sessions.compress_session,
            a.docs.mark_doc_failed,
            a.docs.search_docs,
            a.writer.write_transitions,
            a.writer.mark_failed,
            a.tools.call_api,
            a.models.call_model,
            a.system.call_system,
            a.mcp.call_mcp,
            a.mcp.list_mcp_tools,
            a.integrations.call_integration,
            in_worker.call_in_worker,
        ],
        workflow_runner=workflow_runner(),
        # One developer's calls hold at most max_calls_per_developer places (activities/tenant_limits.py);
        # the slots are many more than that, so another developer's call finds a free one. A slot is cheap:
        # a call waiting on the network is a coroutine, and the worker's CPU goes to workflow tasks.
        interceptors=[*interceptors, TenantLimits(DeveloperLimiter(settings.max_calls_per_developer))],
        max_concurrent_activities=settings.worker_max_activities,
        # The call steps that run in the worker (call_steps.py)
        max_concurrent_local_activities=settings.worker_max_local_activities,
        # On stop, running activities get this long to finish before they are cancelled (and retried).
        graceful_shutdown_timeout=timedelta(seconds=settings.shutdown_grace_seconds),
    )
