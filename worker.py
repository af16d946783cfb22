"""The Mint worker, assembled: every workflow and activity with the clients they need (`mint worker` and
`mint up` run it; mint/stack.py)."""

from __future__ import annotations

import logging
from datetime import timedelta

import asyncpg
import httpx
from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from activities.docs import DocActivities
from activities.egress import EgressPolicy
from activities.http import HttpActivities
from activities.mcp import McpActivities
from activities.models import model_client
from activities.sessions import SessionActivities
from activities.system import SystemActivities, system_caller
from activities.transitions import TransitionWriter
from api.app import create_internal_app
from mint.docs import DocStore
from mint.secrets import SecretStore
from mint.settings import Settings
from mint.store import Store
from workflows.docs import IndexDocWorkflow
from workflows.execution import MapChunkWorkflow, TaskExecutionWorkflow
from workflows.sessions import CompressSessionWorkflow
from workflows.tools import RunToolWorkflow

# Pure, deterministic modules the workflow sandbox may share instead of re-importing for every run.
# The interpreter and the workflow class stay sandboxed, so nondeterminism there is still caught.
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
)


def workflow_runner() -> SandboxedWorkflowRunner:
    """The sandbox the worker (and the replay tests) run workflows in."""
    return SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules(*PASSTHROUGH_MODULES)
    )


def build_worker(client: Client, pool: asyncpg.Pool, http: httpx.AsyncClient, settings: Settings) -> Worker:
    """A worker with every workflow and activity registered, its clients passed in."""
    writer = TransitionWriter(pool)
    egress = EgressPolicy(settings.egress_allow)
    secrets = SecretStore(pool, settings.encryption_keys)
    tools = HttpActivities(http, egress, secrets, settings.max_tool_timeout)
    # httpx logs every request's URL at INFO, and a tool's URL may carry a secret (activities/secrets.py).
    logging.getLogger("httpx").setLevel(logging.WARNING)
    models = model_client(settings, secrets)
    system = SystemActivities(create_internal_app(Store(pool), client, settings, system_caller))
    mcp = McpActivities(settings.mcp_servers, egress)
    docs = DocActivities(DocStore(pool), settings.embedder())
    sessions = SessionActivities(Store(pool), models)
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
            docs.index_doc,
            sessions.compress_session,
            docs.mark_doc_failed,
            docs.search_docs,
            writer.write_transitions,
            writer.mark_failed,
            tools.call_api,
            models.call_model,
            system.call_system,
            mcp.call_mcp,
            mcp.list_mcp_tools,
        ],
        workflow_runner=workflow_runner(),
        max_concurrent_activities=200,
        # On stop, running activities get this long to finish before they are cancelled (and retried).
        graceful_shutdown_timeout=timedelta(seconds=settings.shutdown_grace_seconds),
    )
