"""The calling developer's own settings: the default budget of executions and sessions, and the model that
embeds their docs."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from api.deps import Developer, StoreDep
from api.errors import ERROR_RESPONSES, ApiError
from api.schemas.common import RequestBody
from contracts.budgets import Budget
from infra.models.embeddings import EmbeddingChoice
from infra.store.budgets import Budgets
from infra.store.developer_settings import DeveloperEmbedding
from workflows.problems import Problem

router = APIRouter(tags=["developer"], responses=ERROR_RESPONSES)


class DeveloperSettings(BaseModel):
    default_budget: Budget | None = None
    embedding_model: str | None = None  # null: the server's (MINT_EMBEDDING_MODEL)
    embedding_dimensions: int | None = None


class DeveloperSettingsChange(RequestBody):
    """Only the keys given change; null sets one back to the server's default."""

    # An execution whose task sets no `budget`, and a session that sets none, run within this one
    # (fixed when the execution starts; read at each chat). null removes it.
    default_budget: Budget | None = None
    # The model that embeds this developer's docs and searches: `all-MiniLM-L6-v2` (local, 384 numbers) or
    # `openai/<model>` with `embedding_dimensions` (384, 768, 1024 or 1536; Julep's are 1024). Docs embedded
    # before a change keep their vectors until `mint docs reembed`.
    embedding_model: Annotated[str, Field(max_length=200)] | None = None
    embedding_dimensions: int | None = None


@router.get("/developer/settings", response_model=DeveloperSettings)
async def get_settings(developer: Developer, store: StoreDep) -> Any:
    return await _settings(store, developer)


@router.put("/developer/settings", response_model=DeveloperSettings)
async def put_settings(body: DeveloperSettingsChange, developer: Developer, store: StoreDep) -> Any:
    given = body.model_fields_set
    if "default_budget" in given:
        budget = body.default_budget.limits() if body.default_budget else None
        await Budgets(store.pool).set_default_budget(developer, budget)
    if given & {"embedding_model", "embedding_dimensions"}:
        model, dimensions = body.embedding_model, body.embedding_dimensions
        if model is None and dimensions is not None:
            raise ApiError(
                422, "embedding_dimensions needs embedding_model", [_problem("embedding_model", "missing")]
            )
        if model is not None and (problem := EmbeddingChoice(model, dimensions).problem()):
            raise ApiError(422, f"invalid request: {problem}", [_problem("embedding_model", problem)])
        await DeveloperEmbedding(store.pool).set(developer, model, dimensions)
    return await _settings(store, developer)


async def _settings(store: StoreDep, developer: str) -> dict[str, Any]:
    model, dimensions = await DeveloperEmbedding(store.pool).get(developer) or (None, None)
    return {
        "default_budget": await Budgets(store.pool).default_budget(developer),
        "embedding_model": model,
        "embedding_dimensions": dimensions,
    }


def _problem(field: str, message: str) -> Problem:
    return Problem(f"body.{field}", message)
