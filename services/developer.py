"""The calling developer's own settings: the default budget of executions and sessions, and the model that
embeds their docs."""

from __future__ import annotations

from dataclasses import dataclass

from typing_extensions import TypedDict

from contracts.budgets import Budget
from contracts.json import JsonObject
from infra.models.embeddings import EmbeddingChoice
from infra.store.budgets import Budgets
from infra.store.developer_settings import DeveloperEmbedding
from services.clients import Clients
from services.errors import Invalid
from workflows.problems import Problem


@dataclass(frozen=True)
class DeveloperSettings:
    default_budget: JsonObject | None
    embedding_model: str | None  # None: the server's (MINT_EMBEDDING_MODEL)
    embedding_dimensions: int | None


class SettingsChange(TypedDict, total=False):
    """The settings a request changes (None sets one back to the server's default). The embedding model and
    its dimensions change together."""

    default_budget: Budget | None
    embedding_model: str | None
    embedding_dimensions: int | None


async def settings(clients: Clients, developer: str) -> DeveloperSettings:
    model, dimensions = await DeveloperEmbedding(clients.store.pool).get(developer) or (None, None)
    budget = await Budgets(clients.store.pool).default_budget(developer)
    return DeveloperSettings(budget, model, dimensions)


async def change(clients: Clients, developer: str, given: SettingsChange) -> DeveloperSettings:
    """The settings given changed (each checked); the settings then."""
    if "default_budget" in given:
        budget = given["default_budget"]
        await Budgets(clients.store.pool).set_default_budget(developer, budget.limits() if budget else None)
    if "embedding_model" in given or "embedding_dimensions" in given:
        model, dimensions = given.get("embedding_model"), given.get("embedding_dimensions")
        if model is None and dimensions is not None:
            raise Invalid(
                "embedding_dimensions needs embedding_model",
                problems=[_problem("embedding_model", "missing")],
            )
        if model is not None and (problem := EmbeddingChoice(model, dimensions).problem()):
            raise Invalid(f"invalid request: {problem}", problems=[_problem("embedding_model", problem)])
        await DeveloperEmbedding(clients.store.pool).set(developer, model, dimensions)
    return await settings(clients, developer)


def _problem(field: str, message: str) -> Problem:
    return Problem(f"body.{field}", message)
