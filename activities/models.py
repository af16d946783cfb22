"""The call_model activity: one model call from a workflow, through the shared model client
(mint/models/client.py), heartbeating while it runs."""

from __future__ import annotations

from typing import Any

from temporalio import activity

from activities.heartbeat import heartbeating
from mint.models.client import ModelClient
from workflows.call_steps import CALL_MODEL


class ModelActivities:
    def __init__(self, client: ModelClient):
        self.client = client

    @activity.defn(name=CALL_MODEL)
    async def call_model(self, request: dict[str, Any]) -> dict[str, Any]:
        """One chat completion: {response (OpenAI chat completion shape), usage, cost, attempt}.

        `request` has model, messages, settings, tools, tool_choice, response_format, `at` (the step, for
        recordings) and `owner` ({developer_id, agent_id}: whose secrets may hold the provider's key). A
        JSON answer that does not match the requested schema is retried like a 5xx."""
        async with heartbeating():
            return {**await self.client.complete(request), "attempt": activity.info().attempt}
