"""The call_model activity: one model call from a workflow, through the shared model client
(mint/models/client.py), heartbeating while it runs."""

from __future__ import annotations

import asyncio
import contextlib

from temporalio import activity

from activities.heartbeat import heartbeating
from contracts.calls import ModelAnswer, ModelRequest
from contracts.temporal import CALL_MODEL
from contracts.wire import plain
from mint.models.client import ModelClient


class ModelActivities:
    def __init__(self, client: ModelClient, most_at_once: int = 0):
        self.client = client
        # MINT_WORKER_MAX_MODEL_CALLS: model calls in flight in this worker (0: only its activity slots
        # bound them), so that slow models cannot take every slot from HTTP calls and writes.
        self.slots = asyncio.Semaphore(most_at_once) if most_at_once > 0 else contextlib.nullcontext()

    @activity.defn(name=CALL_MODEL)
    async def call_model(self, request: ModelRequest) -> ModelAnswer:
        """One chat completion (OpenAI's chat completion shape), with its usage and cost. A JSON answer
        that does not match the requested schema is retried like a 5xx. Waiting for a slot heartbeats too."""
        async with heartbeating(), self.slots:
            answer = await self.client.complete(plain(request))
            return ModelAnswer(**answer, attempt=activity.info().attempt)
