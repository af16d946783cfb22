"""The Mint worker: the workflows and activities it runs, and how (the sandbox, concurrency, stopping). The
activities come built, their clients injected, from the composition root (process/stack.py), which
`mint worker` and `mint up` run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import timedelta

from temporalio.client import Client
from temporalio.worker import FixedSizeSlotSupplier, Interceptor, Worker, WorkerTuner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from activities.docs import DocActivities
from activities.http import HttpActivities
from activities.integrations import IntegrationActivities
from activities.mcp import McpActivities
from activities.models import ModelActivities
from activities.registered import Activity, activities_by_name
from activities.sessions import SessionActivities
from activities.system import SystemActivities
from activities.tenant_limits import DeveloperLimiter, TenantLimits
from activities.transitions import TransitionWriter
from activities.webhooks import WebhookActivities
from activities.worker_calls import WorkerCalls
from contracts.liveness import HEARTBEAT_THROTTLE, STICKY_TIMEOUT
from contracts.schedules import SCHEDULE_ACTIVITIES
from contracts.temporal import QUEUE_KINDS, WORKER_CALLS, WORKFLOWS_KIND
from contracts.webhooks import WEBHOOK_ACTIVITIES
from infra.settings import Settings
from infra.temporal.workflow_slots import WorkflowTaskSlots
from process.scheduled_runs import ScheduledRuns
from workflows.registered import WORKFLOWS

# Temporal's local activity slots: a waiting call holds one (activities/tenant_limits.py admits them), and
# each holds its workflow task too, so the workflow task slots bound them long before this does.
IN_WORKER_WAITING_ROOM = 100_000

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
    "expressions",
    "re2",
    "workflows.values",
    "workflows.prompts",
    "contracts",  # the payload types: shared, so a payload decoded outside the sandbox is the class inside
    # Temporal's tracing interceptor (infra/telemetry/tracing.py) works with the one OpenTelemetry context of
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
    schedules: ScheduledRuns  # a schedule's firings (contracts/schedules.py), on the main queue
    webhooks: WebhookActivities  # completion webhooks' deliveries (contracts/webhooks.py), on the main queue


def activity_table(activities: WorkerActivities) -> dict[str, Activity]:
    """Every activity contracts/temporal.py declares, by name, from the worker's activity objects
    (activities/registered.py); the calls a step runs in the worker (WORKER_CALLS) run through
    call_in_worker too."""
    held = [getattr(activities, f.name) for f in fields(activities)]
    in_worker = WorkerCalls(activities.writer, activities_by_name(*held, names=WORKER_CALLS))
    return activities_by_name(*held, in_worker)


def build_workers(
    client: Client,
    activities: WorkerActivities,
    settings: Settings,
    interceptors: Sequence[Interceptor] = (),
) -> list[Worker]:
    """One worker per task queue this process polls (Settings.polled_queues): the main queue's runs every
    workflow and activity (executions started before a kind had a queue of its own still schedule it here);
    a kind's own queue runs only that kind's activities (contracts/temporal.py QUEUE_KINDS)."""
    every = activity_table(activities)
    # One developer's calls hold at most max_calls_per_developer places in this process, whichever queue
    # they came on, and the calls run in the worker at most worker_max_local_activities, a freed place going
    # to the developer with the fewest in flight (activities/tenant_limits.py). The slots are many more than
    # that, so another developer's call finds a free one and waits its turn where the turn is fair. A slot is
    # cheap: a call waiting on the network or its turn is a coroutine, and the worker's CPU goes to workflow
    # tasks, which WorkflowTaskSlots admits (infra/temporal/workflow_slots.py).
    limiter = DeveloperLimiter(settings.max_calls_per_developer, settings.worker_max_local_activities)
    slots = WorkflowTaskSlots(
        settings.worker_max_workflow_tasks,
        most=settings.worker_max_workflow_tasks + settings.worker_max_local_activities,
    )
    interceptors = [*interceptors, TenantLimits(limiter, slots)]
    workers = []
    for queue, kinds in settings.polled_queues().items():
        if WORKFLOWS_KIND in kinds:
            firings = activities_by_name(activities.schedules, names=SCHEDULE_ACTIVITIES)
            deliveries = activities_by_name(activities.webhooks, names=WEBHOOK_ACTIVITIES)
            main = [*every.values(), *firings.values(), *deliveries.values()]
            workers.append(_worker(client, queue, main, WORKFLOWS, settings, interceptors, slots))
        else:
            own = [every[name] for kind in kinds for name in QUEUE_KINDS[kind]]
            workers.append(_worker(client, queue, own, [], settings, interceptors, None))
    return workers


def _worker(
    client: Client,
    queue: str,
    activities: Sequence[Activity],
    workflows: Sequence[type],
    settings: Settings,
    interceptors: Sequence[Interceptor],
    workflow_slots: WorkflowTaskSlots | None,
) -> Worker:
    """A worker on `queue`, sized by the MINT_WORKER_* settings."""
    return Worker(
        client,
        task_queue=queue,
        workflows=workflows,
        activities=activities,
        workflow_runner=workflow_runner(),
        interceptors=interceptors,
        tuner=WorkerTuner.create_composite(
            workflow_supplier=workflow_slots or FixedSizeSlotSupplier(settings.worker_max_workflow_tasks),
            activity_supplier=FixedSizeSlotSupplier(settings.worker_max_activities),
            # The calls run in the worker (call_steps.py) are admitted by the limiter, fairly; Temporal's
            # local activity slots, first come first served, are only a bound far past it.
            local_activity_supplier=FixedSizeSlotSupplier(IN_WORKER_WAITING_ROOM),
            nexus_supplier=FixedSizeSlotSupplier(1),
        ),
        # On stop, running activities get this long to finish before they are cancelled (and retried).
        graceful_shutdown_timeout=timedelta(seconds=settings.shutdown_grace_seconds),
        # A lost worker is noticed within seconds (contracts/liveness.py).
        max_heartbeat_throttle_interval=HEARTBEAT_THROTTLE,
        sticky_queue_schedule_to_start_timeout=STICKY_TIMEOUT,
    )
