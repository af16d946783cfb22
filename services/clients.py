"""The infrastructure the use cases share, built once by the composition root (process/stack.py) and handed to
the API app, whose routes pass it to the services they call: the API names no store or client itself."""

from __future__ import annotations

from dataclasses import dataclass

from temporalio.client import Client

from infra.models.client import ModelClient
from infra.models.embeddings import Embedders
from infra.store.docs import DocStore
from infra.store.execution_events import ExecutionEvents
from infra.store.secrets import SecretStore
from infra.store.tables import Store
from infra.telemetry.metrics import Metrics


@dataclass(frozen=True)
class Clients:
    store: Store
    temporal: Client
    docs: DocStore
    secrets: SecretStore
    embedders: Embedders  # each developer's embedding model
    models: ModelClient
    events: ExecutionEvents  # wakes the execution streams (started, if at all, by the composition root)
    metrics: Metrics | None = None  # what GET /metrics answers the operator (absent: 404)

    async def ping(self) -> None:
        """One round trip to the database (the health check)."""
        await self.store.ping()
