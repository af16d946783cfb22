"""The fast layer's one Temporal: a time-skipping test server and a worker running Mint's real workflows (in
the worker's own sandbox) with every activity faked (tests/unit/fakes.py). No Postgres, no dev server, no
API process; one server and one worker for the whole session."""

from __future__ import annotations

import ast
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import UnsandboxedWorkflowRunner, Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from process import local_services
from tests.unit.fakes import Fakes
from tests.unit.harness import Harness
from workflows.registered import WORKFLOWS

# The SDK gives a server 5 s to start; on a loaded 2-core machine it can take longer.
SERVER_STARTUP = timedelta(seconds=60)
WORKER_PY = Path(__file__).parents[2] / "process/worker.py"


def passthrough_modules() -> tuple[str, ...]:
    """process/worker.py's PASSTHROUGH_MODULES, read from its source: importing process/worker.py would bring every
    activity's clients along (the model SDKs, FastAPI, MCP: seconds of imports this layer never uses)."""
    for node in ast.parse(WORKER_PY.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "PASSTHROUGH_MODULES" for t in node.targets
        ):
            return tuple(ast.literal_eval(node.value))
    raise AssertionError("process/worker.py no longer defines PASSTHROUGH_MODULES")


def workflow_runner() -> SandboxedWorkflowRunner:
    """The strict sandbox worker.workflow_runner(strict=True) makes: the interpreter re-imported inside it,
    so that nondeterminism in it is caught."""
    return SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules(*passthrough_modules())
    )


async def _time_skipping_server() -> WorkflowEnvironment:
    return await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=local_services.find_binary("temporal-test-server"),
        test_server_startup_timeout=SERVER_STARTUP,
    )


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def unit_env() -> AsyncIterator[WorkflowEnvironment]:
    env = await _time_skipping_server()
    yield env
    await env.shutdown()


@pytest_asyncio.fixture(loop_scope="session")
async def fresh_env() -> AsyncIterator[WorkflowEnvironment]:
    """A time-skipping server of this test's own, for a test that needs time to skip (a timer).

    On the shared server, time sometimes stopped skipping for good on a loaded machine after earlier tests
    (every later timer then waited in real time: CI saw it once); the cause is in the test server or the
    SDK's lock counting, not found. A server costs about half a second, so only timer tests get their own."""
    env = await _time_skipping_server()
    yield env
    await env.shutdown()


@pytest.fixture(scope="session")
def session_fakes() -> Fakes:
    return Fakes()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def unit_worker(unit_env: WorkflowEnvironment, session_fakes: Fakes) -> AsyncIterator[str]:
    """A worker with the workflows process/worker.py registers and the fake activities; yields its task queue.

    Workflows run outside the sandbox: the sandbox re-imports the interpreter for every run (about 0.15 s
    each here, against 0.03 s), and test_worker_sandbox.py runs every step kind inside it once."""
    queue = f"unit-{uuid.uuid4()}"
    async with Worker(
        unit_env.client,
        task_queue=queue,
        workflows=WORKFLOWS,
        activities=session_fakes.activities(),
        workflow_runner=UnsandboxedWorkflowRunner(),
        max_concurrent_activities=200,
    ):
        yield queue


@pytest.fixture
def fakes(session_fakes: Fakes) -> Fakes:
    """The fake activities, back to their defaults for this test."""
    session_fakes.reset()
    return session_fakes


@pytest_asyncio.fixture(loop_scope="session")
async def mint(unit_env: WorkflowEnvironment, unit_worker: str, fakes: Fakes) -> AsyncIterator[Harness]:
    """Runs tasks as the API would start them; ends whatever a test left running."""
    harness = Harness(unit_env, unit_worker, fakes)
    yield harness
    await harness.end_all()


@pytest_asyncio.fixture(loop_scope="session")
async def timed_mint(fresh_env: WorkflowEnvironment, fakes: Fakes) -> AsyncIterator[Harness]:
    """`mint` on a server of this test's own (see fresh_env), for tests whose workflows wait on timers."""
    queue = f"unit-timed-{uuid.uuid4()}"
    async with Worker(
        fresh_env.client,
        task_queue=queue,
        workflows=WORKFLOWS,
        activities=fakes.activities(),
        workflow_runner=UnsandboxedWorkflowRunner(),
    ):
        harness = Harness(fresh_env, queue, fakes)
        yield harness
        await harness.end_all()
