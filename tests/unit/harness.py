"""Run a task as the API runs it, on the unit layer's Temporal: validated as `POST /agents/{id}/tasks`
validates it, started by the API's own start path (services/executions/launch.py) and resumed by its resume path, with
the transitions the fake writer kept in memory."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from contracts.records.executions import Execution
from contracts.records.tasks import TaskVersion
from contracts.transitions import TERMINAL_STATUSES
from infra.settings import Settings
from services.executions.control import resume_execution
from services.executions.launch import launch
from tests.unit.fakes import ExecutionRow, Fakes, FakeStore
from workflows.validate import validate_task

DEVELOPER = "00000000-0000-4000-8000-00000000d0d0"
AGENT = {
    "id": "00000000-0000-4000-8000-0000000a9e47",
    "name": "tester",
    "about": "an agent for tests",
    "model": "fake-model",
    "instructions": "Be brief.",
    "metadata": {},
    "default_settings": None,
}
# However long a workflow runs in Temporal's skipped time, a test waits at most this long for it.
DEADLINE_SECONDS = 20.0


def task(*main: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A task document: `main` is these steps; other named workflows, tools and so on as keywords."""
    return {"name": "unit", "main": list(main), **extra}


@dataclass
class Outcome:
    """An execution as a client would read it: the row's status, output and error, and its transitions."""

    id: str
    row: ExecutionRow
    failure: str | None = None  # the workflow's own failure message, as Temporal reports it
    transitions: list[dict[str, Any]] = field(init=False)

    def __post_init__(self) -> None:
        self.transitions = self.row.transitions

    @property
    def status(self) -> str:
        return self.row.status

    @property
    def output(self) -> Any:
        return self.row.output

    @property
    def error(self) -> str | None:
        return self.row.error

    @property
    def types(self) -> list[str]:
        return self.row.types

    def at(self, workflow: str) -> list[dict[str, Any]]:
        """The `step` transitions written at one (possibly nested) path, in the order written."""
        return [t for t in self.transitions if t["type"] == "step" and t["current"]["workflow"] == workflow]

    def outputs(self, workflow: str) -> list[Any]:
        return [t["output"] for t in self.at(workflow)]

    def step(self, workflow: str, index: int) -> dict[str, Any]:
        """The one `step` transition of step `index` at `workflow`."""
        found = [t for t in self.at(workflow) if t["current"]["step"] == index]
        assert len(found) == 1, f"expected one step transition at {workflow}[{index}], got {found}"
        return found[0]

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [t for t in self.transitions if t["type"] == kind]


class _KeepsHandles:
    """The Temporal client as `launch` sees it, keeping each handle it starts: only those handles skip
    time while their result is awaited (the test server's time skipping is unlocked by them)."""

    def __init__(self, client: Client):
        self.client = client
        self.handles: dict[str, WorkflowHandle] = {}

    async def start_workflow(self, *args: Any, **kwargs: Any) -> WorkflowHandle:
        handle = await self.client.start_workflow(*args, **kwargs)
        self.handles[handle.id] = handle
        return handle


class Harness:
    """Starts, resumes and cancels executions; each test gets a fresh one over the session's worker."""

    def __init__(self, env: WorkflowEnvironment, queue: str, fakes: Fakes):
        self.env = env
        self.fakes = fakes
        self.settings = Settings(task_queue=queue)
        self.temporal = _KeepsHandles(env.client)

    async def start(
        self,
        spec: dict[str, Any],
        input_: Any = None,
        *,
        agent_tools: list[dict[str, Any]] | None = None,
        agent: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        **settings: Any,
    ) -> str:
        """Validate the task and start an execution of it through services/executions/launch.py; its id."""
        agent_tools = agent_tools or []
        valid = validate_task(spec, frozenset(t["name"] for t in agent_tools))
        agent_row = {**AGENT, **(agent or {})}
        now = datetime.now(UTC)
        task = TaskVersion(str(uuid.uuid4()), 1, agent_row["id"], valid.dialect, valid.document, now, now)
        execution = _execution(str(uuid.uuid4()), "queued", input_, metadata or {})
        self.fakes.execution(execution.id)  # the `queued` row the API inserts first
        store = FakeStore(self.fakes, agent_row, agent_tools)
        run_settings = Settings(**{**self.settings.__dict__, **settings})
        await launch(store, self.temporal, run_settings, DEVELOPER, task, execution)  # type: ignore[arg-type]
        return execution.id

    async def finish(self, execution_id: str) -> Outcome:
        """Wait (in skipped time) for the execution's workflow to end."""
        failure = None
        try:
            await asyncio.wait_for(self._result(execution_id), DEADLINE_SECONDS)
        except WorkflowFailureError as exc:
            failure = exc.cause.message if isinstance(exc.cause, ApplicationError) else str(exc.cause)
        outcome = self.outcome(execution_id, failure)
        assert outcome.status in TERMINAL_STATUSES, f"the workflow ended, its row says {outcome.status}"
        return outcome

    async def _result(self, execution_id: str) -> Any:
        return await self.temporal.handles[execution_id].result()

    async def run(self, spec: dict[str, Any], input_: Any = None, **options: Any) -> Outcome:
        """Start an execution and wait for it to end."""
        return await self.finish(await self.start(spec, input_, **options))

    async def succeed(self, spec: dict[str, Any], input_: Any = None, **options: Any) -> Outcome:
        """Run to the end and require `succeeded`, a leading `init` and a trailing `finish` with the output."""
        outcome = await self.run(spec, input_, **options)
        assert outcome.status == "succeeded", (outcome.error, outcome.types)
        assert outcome.types[0] == "init" and outcome.types[-1] == "finish", outcome.types
        assert outcome.transitions[-1]["output"] == outcome.output
        return outcome

    async def fail(self, spec: dict[str, Any], input_: Any = None, **options: Any) -> Outcome:
        """Run to the end and require `failed`, with a final `error` transition carrying the message."""
        outcome = await self.run(spec, input_, **options)
        assert outcome.status == "failed", (outcome.output, outcome.types)
        assert outcome.types[-1] == "error", outcome.types
        assert outcome.error and outcome.transitions[-1]["output"] == {"error": outcome.error}
        assert outcome.output is None
        return outcome

    def outcome(self, execution_id: str, failure: str | None = None) -> Outcome:
        return Outcome(execution_id, self.fakes.execution(execution_id), failure)

    async def until(
        self, execution_id: str, kind: str, count: int = 1, timeout: float = DEADLINE_SECONDS
    ) -> Outcome:
        """Wait (in real time: no time is skipped) until `count` transitions of type `kind` are written."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.fakes.execution(execution_id).types.count(kind) < count:
            if loop.time() > deadline:
                raise AssertionError(
                    f"never saw {count} {kind!r}: {self.fakes.execution(execution_id).types}"
                )
            await asyncio.sleep(0.01)
        return self.outcome(execution_id)

    async def resume(self, execution_id: str, value: Any) -> None:
        """`PUT /executions/{id}` with `{"status": "running", "input": value}`: answers the oldest open wait."""
        row = self.fakes.execution(execution_id)
        store = FakeStore(self.fakes, AGENT, [])
        execution = _execution(execution_id, row.status)
        await resume_execution(store, self.env.client, DEVELOPER, execution, value)  # type: ignore[arg-type]

    async def cancel(self, execution_id: str) -> Outcome:
        """`PUT /executions/{id}` with `{"status": "cancelled"}`, then wait for the workflow to end."""
        await self.env.client.get_workflow_handle(execution_id).cancel()
        try:
            await asyncio.wait_for(self._result(execution_id), DEADLINE_SECONDS)
        except WorkflowFailureError:
            pass
        return self.outcome(execution_id)

    async def end_all(self) -> None:
        """Terminate what a test left running (a failed assertion mid-wait)."""
        for execution_id in self.temporal.handles:
            if self.fakes.execution(execution_id).status not in TERMINAL_STATUSES:
                try:
                    await self.env.client.get_workflow_handle(execution_id).terminate("test ended")
                except RPCError:
                    pass


def _execution(
    id_: str, status: str, input_: Any = None, metadata: dict[str, Any] | None = None
) -> Execution:
    """The execution record the service reads from its row (the fields a start and a resume use)."""
    now = datetime.now(UTC)
    return Execution(id_, "", 1, status, input_, metadata or {}, now, now)
