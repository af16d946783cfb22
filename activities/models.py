"""The call_model activity: one model call from a workflow, through the shared model client
(infra/models/client.py), heartbeating while it runs, within the execution's budget."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import uuid

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.heartbeat import heartbeating
from activities.live_text import LiveText
from contracts.calls import ModelAnswer, ModelRequest
from contracts.temporal import CALL_MODEL
from infra.models.client import ModelClient
from infra.store.budgets import Budgets, OverBudget, UnknownExecution, tokens_of
from infra.store.step_streams import StepStreams
from infra.telemetry.logs import execution_of
from infra.temporal import errors


class ModelActivities:
    def __init__(
        self,
        client: ModelClient,
        budgets: Budgets | None = None,
        most_at_once: int = 0,
        streams: StepStreams | None = None,
    ):
        self.client = client
        self.budgets = budgets
        self.streams = streams  # where a streamed prompt step's text goes as it grows (None: nowhere)
        # MINT_WORKER_MAX_MODEL_CALLS: model calls in flight in this worker (0: only its activity slots
        # bound them), so that slow models cannot take every slot from HTTP calls and writes.
        self.slots = asyncio.Semaphore(most_at_once) if most_at_once > 0 else contextlib.nullcontext()

    @activity.defn(name=CALL_MODEL)
    async def call_model(self, request: ModelRequest) -> ModelAnswer:
        """One chat completion (OpenAI's chat completion shape), with its usage and cost. A JSON answer
        that does not match the requested schema is retried like a 5xx. Waiting for a slot heartbeats too.
        Refused (BudgetExceeded, not retried) when the execution's budget allows no more calls, and
        (BudgetUnknown) when the call belongs to no execution. A streamed prompt step's call (`stream_as`)
        publishes its text as it grows (activities/live_text.py)."""
        execution = _charged_execution()
        budgeted = await self._reserve(execution)
        async with heartbeating(), self.slots:
            answer = await self._complete(request, execution)
        if budgeted and self.budgets is not None:
            cost = float(answer.cost or 0)
            await self.budgets.settle_call(execution, _call_key(), tokens_of(answer.usage), cost)
        return dataclasses.replace(answer, attempt=activity.info().attempt)

    async def _complete(self, request: ModelRequest, execution: str) -> ModelAnswer:
        """The call, streamed from the provider when its step's text goes out live."""
        if request.stream_as is None or self.streams is None:
            return await self.client.complete(request)
        live = LiveText(self.streams, execution, _call_key(), request.stream_as, activity.info().attempt)
        try:
            return await self.client.complete(request, live.piece)
        finally:
            await live.close()

    async def _reserve(self, execution: str) -> bool:
        """Reserve this call in the execution's budget (the same call across its retries)."""
        if self.budgets is None:
            return False  # a worker built without a store keeps no budgets at all
        try:
            return await self.budgets.reserve_call(execution, _call_key())
        except OverBudget as exc:
            raise errors.permanent(str(exc), "BudgetExceeded") from None  # expected: one log line
        except UnknownExecution as exc:
            raise ApplicationError(str(exc), type="BudgetUnknown", non_retryable=True) from None


def _charged_execution() -> str:
    """The execution whose budget this call counts against, from the workflow the activity runs for (an
    execution's workflow id is its id; a map's child workflow is `ID.chunk.N`), never from the request: a
    field a caller leaves out (a handoff's owner did) would take the call out of its budget. A call from
    any other workflow has no execution to charge and is refused rather than made unbudgeted."""
    info = activity.info()
    found = execution_of(info.workflow_type, info.workflow_id)
    try:
        return str(uuid.UUID(found or ""))
    except ValueError:
        message = (
            f"a model call from workflow {info.workflow_id!r} ({info.workflow_type}) belongs to no "
            "execution, so no budget can be charged for it"
        )
        raise ApplicationError(message, type="BudgetUnknown", non_retryable=True) from None


def _call_key() -> str:
    """This call's identity, the same across its attempts: its workflow run's and activity's ids (a fan-out
    child's calls are its own workflow's; in the worker, the local activity's)."""
    info = activity.info()
    return f"{info.workflow_id}/{info.workflow_run_id}/{info.activity_id}"
