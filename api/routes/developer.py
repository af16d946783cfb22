"""The calling developer's own settings: for now, the default budget of executions and sessions."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel

from api.deps import Developer, StoreDep
from api.errors import ERROR_RESPONSES
from api.schemas.common import RequestBody
from contracts.budgets import Budget
from mint.store.budgets import Budgets

router = APIRouter(tags=["developer"], responses=ERROR_RESPONSES)


class DeveloperSettings(BaseModel):
    default_budget: Budget | None = None


class DeveloperSettingsChange(RequestBody):
    # An execution whose task sets no `budget`, and a session that sets none, run within this one
    # (fixed when the execution starts; read at each chat). null removes it.
    default_budget: Budget | None = None


@router.get("/developer/settings", response_model=DeveloperSettings)
async def get_settings(developer: Developer, store: StoreDep) -> Any:
    return {"default_budget": await Budgets(store.pool).default_budget(developer)}


@router.put("/developer/settings", response_model=DeveloperSettings)
async def put_settings(body: DeveloperSettingsChange, developer: Developer, store: StoreDep) -> Any:
    budget = body.default_budget.limits() if body.default_budget else None
    await Budgets(store.pool).set_default_budget(developer, budget)
    return {"default_budget": budget}
