"""Who a request acts for: the developer its API key names, and the work done for that developer, which
row-level security keeps to that developer's rows (infra/store/tenancy.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from infra.store.tenancy import acting_as
from services.clients import Clients


async def developer_for_key(clients: Clients, key: str) -> str | None:
    """The developer whose live API key this is, or None. Called acting for no tenant yet: api_keys is not
    readable as a tenant."""
    return await clients.store.developer_for_key(key)


@contextlib.contextmanager
def acting_for(developer: str | None) -> Iterator[None]:
    """The services called inside read and write only `developer`'s rows. None: no tenant's, as a request
    acts before its API key names a developer (the owner's role, which reads keys to find that developer)."""
    with acting_as(developer):
        yield
