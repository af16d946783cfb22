"""Who a request acts for: the developer an API key names, and acting for that developer (or for none) under
row-level security (infra/store/tenancy.py)."""

from __future__ import annotations

from infra.store.tenancy import ActingForNoTenant, acting_as
from services.clients import Clients

__all__ = ["ActingForNoTenant", "acting_as", "developer_for_key"]


async def developer_for_key(clients: Clients, key: str) -> str | None:
    """The developer whose live API key this is, or None. Called acting for no tenant yet: api_keys is not
    readable as a tenant."""
    return await clients.store.developer_for_key(key)
