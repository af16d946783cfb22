"""The calling developer's own settings: the default budget of executions and sessions, the model that
embeds their docs, and the secret that signs their webhooks."""

from __future__ import annotations

import asyncio
from dataclasses import asdict
from typing import Annotated

from fastapi import APIRouter
from pydantic import BaseModel, Field

from api.deps import ClientsDep, Developer
from api.errors import ERROR_RESPONSES
from api.schemas.common import RequestBody
from contracts.budgets import Budget
from services import developer as service
from services.developer import SettingsChange
from services.webhooks import rotate_webhook_secret, webhook_secret

router = APIRouter(tags=["developer"], responses=ERROR_RESPONSES)


class DeveloperSettings(BaseModel):
    default_budget: Budget | None = None
    embedding_model: str | None = None  # null: the server's (MINT_EMBEDDING_MODEL)
    embedding_dimensions: int | None = None


class DeveloperSettingsShown(DeveloperSettings):
    """What GET answers: the settings, and the key of the HMAC in every completion webhook's Mint-Signature
    header (docs/webhooks.md), which PUT does not change."""

    webhook_secret: str


class WebhookSecret(BaseModel):
    webhook_secret: str


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

    def change(self) -> SettingsChange:
        given, change = self.model_fields_set, SettingsChange()
        if "default_budget" in given:
            change["default_budget"] = self.default_budget
        if given & {"embedding_model", "embedding_dimensions"}:
            change["embedding_model"] = self.embedding_model
            change["embedding_dimensions"] = self.embedding_dimensions
        return change


@router.get("/developer/settings", response_model=DeveloperSettingsShown)
async def get_settings(developer: Developer, clients: ClientsDep) -> DeveloperSettingsShown:
    found, secret = await asyncio.gather(
        service.settings(clients, developer), webhook_secret(clients, developer)
    )
    return DeveloperSettingsShown(**asdict(found), webhook_secret=secret)


@router.put("/developer/settings", response_model=DeveloperSettings)
async def put_settings(
    body: DeveloperSettingsChange, developer: Developer, clients: ClientsDep
) -> service.DeveloperSettings:
    return await service.change(clients, developer, body.change())


@router.post("/developer/webhook-secret/rotate", response_model=WebhookSecret)
async def rotate_secret(developer: Developer, clients: ClientsDep) -> WebhookSecret:
    """A new webhook secret replaces the old one at once: deliveries sent from now on are signed with it."""
    return WebhookSecret(webhook_secret=await rotate_webhook_secret(clients, developer))
