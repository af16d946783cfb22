"""Every activity Mint's workflows call, faked under its real name, taking and returning what the real one does.

The worker in tests/unit/conftest.py registers these instead of activities/ (no Postgres, no HTTP, no model):
the transition writer keeps each execution's rows in memory, checked as the real writer checks them; the call
activities answer from a script a test may replace (`fakes.model = ...`). When an activity's payload changes
shape, this is the one module to update.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.call_batches import run_batch
from activities.registered import activities_by_name
from activities.step_runs import StepRunner
from contracts.calls import BatchOutcome, CallAnswer, CallBatch, RecordedAnswer, WorkerCall
from contracts.records.agents import Agent
from contracts.records.executions import OpenWait
from contracts.records.tools import Tool
from contracts.step_runs import StepRun, StepRunOutcome
from contracts.temporal import (
    CALL_API,
    CALL_BATCH_IN_WORKER,
    CALL_IN_WORKER,
    CALL_INTEGRATION,
    CALL_MCP,
    CALL_MODEL,
    CALL_SYSTEM,
    COMPRESS_SESSION,
    INDEX_DOC,
    LIST_MCP_TOOLS,
    MARK_DOC_FAILED,
    MARK_FAILED,
    RUN_STEPS_IN_WORKER,
    SEARCH_DOCS,
    WORKER_CALLS,
    WRITE_TRANSITIONS,
)
from contracts.transitions import (
    TERMINAL_STATUSES,
    InvalidTransition,
    TransitionBatch,
    TransitionRow,
    check_sequence,
)
from infra.store.execution_records import read_open_wait
from infra.store.resource_records import agent_of

Handler = Callable[[dict[str, Any]], Any]


@dataclass
class ExecutionRow:
    """What the `executions` row and its `transitions` rows would hold (outputs decoded from JSON)."""

    status: str = "queued"
    transitions: list[dict[str, Any]] = field(default_factory=list)
    output: Any = None
    error: str | None = None
    statuses: list[str] = field(default_factory=list)  # the status after each batch, in order
    batches: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def types(self) -> list[str]:
        return [t["type"] for t in self.transitions]


def completion(
    content: str | None = None,
    tool_calls: list[tuple[str, dict[str, Any]]] | None = None,
    model: str = "fake-model",
    usage: tuple[int, int] = (7, 3),
) -> dict[str, Any]:
    """A chat completion as activities/models.py returns it (OpenAI's shape), with tool calls named
    `call_0`, `call_1`, ... and their arguments as JSON text."""
    calls = [
        {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for i, (name, args) in enumerate(tool_calls or [])
    ]
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    prompt, answered = usage
    return {
        "id": "chatcmpl-fake",
        "model": model,
        "created": 0,
        "usage": {"prompt_tokens": prompt, "completion_tokens": answered, "total_tokens": prompt + answered},
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
    }


def echo_model(request: dict[str, Any]) -> dict[str, Any]:
    """The default model: answers `echo: ` and the last message's text."""
    return completion(f"echo: {request['messages'][-1]['content']}", model=request.get("model") or "fake")


def http_response(
    status: int = 200, body: Any = None, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    """An api_call answer as activities/http.py returns it: {status_code, headers, content, json}."""
    content = body if isinstance(body, str) else json.dumps(body)
    parsed = None if isinstance(body, str) else body
    return {
        "status_code": status,
        "headers": {"content-type": "application/json", **(headers or {})},
        "content": content,
        "json": parsed,
    }


def echo_api(request: dict[str, Any]) -> dict[str, Any]:
    """The default HTTP server: answers 200 with the request it was sent."""
    keys = ("method", "url", "params", "json", "headers", "content", "data")
    return http_response(200, {k: request.get(k) for k in keys if k in request})


class Fakes:
    """The fake activities and what they saw; `reset()` gives every test the defaults again."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.executions: dict[str, ExecutionRow] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []  # (activity name, request), in call order
        self.model: Handler = echo_model  # request -> a chat completion (or raise ApplicationError)
        self.api: Handler = echo_api  # request -> an http_response
        self.system: Handler = lambda request: {"called": request["system"], "with": request["arguments"]}
        self.mcp: Handler = lambda request: {"tool": request["tool"], "arguments": request["arguments"]}
        self.integration: Handler = lambda request: {
            "provider": request["provider"],
            "method": request["method"],
            "arguments": request["arguments"],
        }
        self.mcp_tools: list[dict[str, Any]] = []
        self.docs: Handler = lambda request: []  # request -> the docs found
        self.answers: dict[tuple[str, str], Any] = {}  # (execution, call id) -> a call in the worker's answer
        self.in_worker: list[str] = []  # the activities that ran in the worker (call_in_worker), in order
        self.batches: list[int] = []  # how many calls each batch of calls in the worker carried, in order

    def execution(self, execution_id: str) -> ExecutionRow:
        return self.executions.setdefault(execution_id, ExecutionRow())

    def requests(self, name: str) -> list[dict[str, Any]]:
        """The requests one activity received, in order."""
        return [request for called, request in self.calls if called == name]

    def activities(self) -> list[Callable[..., Any]]:
        """Every activity contracts/temporal.py declares, each faked here under its name."""
        return list(activities_by_name(self).values())

    # The transition writer (activities/transitions.py) ----------------------------------------------------

    @activity.defn(name=WRITE_TRANSITIONS)
    async def write_transitions(self, batch: TransitionBatch) -> None:
        """Idempotent by seq, refuses what the real writer refuses (a non-retryable InvalidTransition)."""
        row = self.execution(batch.execution_id)
        last_seq = row.transitions[-1]["seq"] if row.transitions else 0
        fresh = [t for t in batch.transitions if t["seq"] > last_seq]
        if not fresh:
            return
        try:
            if row.status in TERMINAL_STATUSES:
                raise InvalidTransition(f"the execution already ended ({row.status})")
            check_sequence(
                row.transitions[-1]["type"] if row.transitions else None, [t["type"] for t in fresh]
            )
        except InvalidTransition as exc:
            raise ApplicationError(str(exc), type="InvalidTransition", non_retryable=True) from None
        expected = list(range(last_seq + 1, last_seq + 1 + len(fresh)))
        assert [t["seq"] for t in fresh] == expected, f"seqs {[t['seq'] for t in fresh]} after {last_seq}"
        for transition in fresh:
            row.transitions.append({**transition, "output": json.loads(transition["output"])})
            usage = (transition["metadata"] or {}).get("usage") or {}
            row.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            row.completion_tokens += int(usage.get("completion_tokens") or 0)
        row.status = batch.status
        row.statuses.append(batch.status)
        row.batches += 1
        if batch.status == "succeeded":
            row.output = batch.output
        if batch.error is not None:
            row.error = batch.error

    @activity.defn(name=MARK_FAILED)
    async def mark_failed(self, batch: TransitionBatch) -> None:
        row = self.execution(batch.execution_id)
        if row.status not in TERMINAL_STATUSES:
            row.status, row.error = "failed", batch.error

    # Calls (activities/models.py, http.py, system.py, mcp.py, integrations/, docs.py) ------------------------------------

    def _answer(self, name: str, handler: Handler, request: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((name, request))
        return {"response": handler(request), "attempt": activity.info().attempt}

    @activity.defn(name=CALL_MODEL)
    async def call_model(self, request: dict[str, Any]) -> dict[str, Any]:
        """{response: a chat completion, usage, cost, attempt}."""
        answer = self._answer(CALL_MODEL, self.model, request)
        return {**answer, "usage": answer["response"].get("usage") or {}, "cost": None}

    @activity.defn(name=CALL_API)
    async def call_api(self, request: dict[str, Any]) -> dict[str, Any]:
        """{response: {status_code, headers, content, json}, attempt}."""
        return self._answer(CALL_API, self.api, request)

    @activity.defn(name=CALL_SYSTEM)
    async def call_system(self, request: dict[str, Any]) -> dict[str, Any]:
        return self._answer(CALL_SYSTEM, self.system, request)

    @activity.defn(name=CALL_MCP)
    async def call_mcp(self, request: dict[str, Any]) -> dict[str, Any]:
        return self._answer(CALL_MCP, self.mcp, request)

    @activity.defn(name=CALL_IN_WORKER)
    async def call_in_worker(self, call: WorkerCall) -> dict[str, Any]:
        """A call step run in the worker (activities/worker_calls.py): writes the transitions it carries,
        records the answers it carries, and answers with its own recorded answer or as the named call's fake."""
        self.in_worker.append(call.activity)
        if call.transitions is not None:
            await self.write_transitions(call.transitions)
        for recorded in call.answers:
            self.answers.setdefault((call.execution_id, recorded.call_id), recorded.answer)
        if (call.execution_id, call.call_id) in self.answers:
            return self.answers[(call.execution_id, call.call_id)]
        calls = activities_by_name(self, names=WORKER_CALLS)
        answer: dict[str, Any] = await calls[call.activity](call.request)
        return answer

    @activity.defn(name=CALL_BATCH_IN_WORKER)
    async def call_batch_in_worker(self, batch: CallBatch) -> list[BatchOutcome]:
        """A fan-out's batch of calls (activities/call_batches.py runs it, over the named call's fake):
        writes and records what it carries, skips the calls with a recorded answer, records the others'."""
        self.in_worker.extend(batch.activity for _ in batch.calls)
        self.batches.append(len(batch.calls))
        if batch.transitions is not None:
            await self.write_transitions(batch.transitions)
        await self._record(batch.execution_id, batch.answers)
        ids = [(batch.execution_id, c.call_id) for c in batch.calls]
        recorded = {key[1]: self.answers[key] for key in ids if key in self.answers}
        fake = activities_by_name(self, names=WORKER_CALLS)[batch.activity]

        async def call(request: Any) -> CallAnswer:
            return CallAnswer(**await fake(request))

        async def record(answers: list[RecordedAnswer]) -> None:
            await self._record(batch.execution_id, answers)

        return await run_batch(batch, call, recorded, record)

    @activity.defn(name=RUN_STEPS_IN_WORKER)
    async def run_steps_in_worker(self, run: StepRun) -> StepRunOutcome:
        """A run of steps (activities/step_runs.py runs it, over call_api's fake): writes and records what it
        carries, then each call's transitions and answer."""
        execution, developer = run.params.execution_id, run.params.developer_id
        fake = activities_by_name(self, names=WORKER_CALLS)[CALL_API]

        async def call(request: Any) -> CallAnswer:
            return CallAnswer(**await fake(request))

        async def look_up(call_ids: list[str]) -> dict[str, Any]:
            if run.transitions is not None:
                await self.write_transitions(run.transitions)
            await self._record(execution, run.answers)
            return {i: self.answers[(execution, i)] for i in call_ids if (execution, i) in self.answers}

        async def record(rows: list[TransitionRow], answers: list[RecordedAnswer]) -> None:
            if rows:
                await self.write_transitions(TransitionBatch(execution, developer, rows, "running"))
            await self._record(execution, answers)

        self.in_worker.append(RUN_STEPS_IN_WORKER)
        return await StepRunner(run, call, look_up, record).go()

    async def _record(self, execution_id: str, answers: list[RecordedAnswer]) -> None:
        for recorded in answers:
            answer = recorded.answer
            self.answers.setdefault(
                (execution_id, recorded.call_id), vars(answer) if isinstance(answer, CallAnswer) else answer
            )

    @activity.defn(name=CALL_INTEGRATION)
    async def call_integration(self, request: dict[str, Any]) -> dict[str, Any]:
        return self._answer(CALL_INTEGRATION, self.integration, request)

    @activity.defn(name=LIST_MCP_TOOLS)
    async def list_mcp_tools(self, integration: dict[str, Any]) -> list[dict[str, Any]]:
        self.calls.append((LIST_MCP_TOOLS, integration))
        return self.mcp_tools

    @activity.defn(name=SEARCH_DOCS)
    async def search_docs(self, request: dict[str, Any]) -> dict[str, Any]:
        """{response: {docs}, attempt}."""
        return self._answer(SEARCH_DOCS, lambda r: {"docs": self.docs(r)}, request)

    # Background workflows' activities (docs, sessions) -----------------------------------------------------

    @activity.defn(name=INDEX_DOC)
    async def index_doc(self, request: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((INDEX_DOC, request))
        return {"chunks": 1, "model": "fake-embedder"}

    @activity.defn(name=MARK_DOC_FAILED)
    async def mark_doc_failed(self, request: dict[str, Any]) -> None:
        self.calls.append((MARK_DOC_FAILED, request))

    @activity.defn(name=COMPRESS_SESSION)
    async def compress_session(self, request: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((COMPRESS_SESSION, request))
        return {"summarized": 0}


class FakeStore:
    """The few Store methods the API's start and resume paths (services/executions/) use, over the fakes' rows."""

    def __init__(self, fakes: Fakes, agent: dict[str, Any], agent_tools: list[dict[str, Any]]):
        self.fakes = fakes
        now = datetime.now(UTC)
        self.agent = agent_of({"created_at": now, "updated_at": now, **agent})
        self.tools = [
            Tool(str(uuid.uuid4()), self.agent.id, t["name"], t["type"], t.get("description"), t, now, now)
            for t in agent_tools
        ]

    async def get(self, table: Any, developer_id: str, id_: str) -> Agent | None:
        return self.agent if id_ == self.agent.id else None

    async def agent_tools(self, developer_id: str, agent_id: str) -> list[Tool]:
        return self.tools

    async def set_execution_status(
        self,
        developer_id: str,
        execution_id: str,
        status: str,
        only_from: tuple[str, ...],
        error: str | None = None,
    ) -> None:
        row = self.fakes.execution(execution_id)
        if row.status in only_from:
            row.status, row.error = status, error or row.error

    async def mark_started(self, developer_id: str, execution_id: str) -> None:
        await self.set_execution_status(developer_id, execution_id, "starting", ("queued",))

    async def open_waits(self, developer_id: str, execution_id: str) -> list[OpenWait]:
        """The `wait` transitions no `resume` answered yet, oldest first."""
        transitions = self.fakes.execution(execution_id).transitions
        answered = {t["metadata"].get("wait_seq") for t in transitions if t["type"] == "resume"}
        now = datetime.now(UTC)
        return [
            read_open_wait({**t, "execution_id": execution_id, "created_at": now})
            for t in transitions
            if t["type"] == "wait" and t["seq"] not in answered
        ]
