"""Whether executions carry Mint's search attributes, decided once when the API starts.

A workflow started with (or upserting) a search attribute its namespace has not registered is refused, so
with MINT_SEARCH_ATTRIBUTES=auto (the default) the API asks the namespace which ones it has, once, and sets
them only when all of Mint's are there. `mint up` starts its dev server with them (dev_server_args()), but the
dev server registers those flags only when it creates its database, so on a data dir from before them the
API registers what is missing itself: that Temporal is Mint's own (TEMPORAL_ADDRESS unset). A cluster Mint
does not manage needs an operator to (docs/temporal-ui.md).
"""

from __future__ import annotations

import logging
from dataclasses import replace

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest, ListSearchAttributesRequest
from temporalio.client import Client
from temporalio.service import RPCError

from contracts.temporal import SEARCH_ATTRIBUTES
from infra.settings import Settings

log = logging.getLogger(__name__)


async def missing_search_attributes(client: Client, namespace: str) -> list[str] | None:
    """Mint's search attributes that `namespace` has not registered as Keyword; None when the server will not
    say (an API key without the operator's permission, a test server without the operator service)."""
    try:
        response = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=namespace)
        )
    except RPCError as exc:
        log.warning("cannot list the search attributes of Temporal namespace %r: %s", namespace, exc.message)
        return None
    keyword = IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD
    registered = response.custom_attributes
    return [a.name for a in SEARCH_ATTRIBUTES if registered.get(a.name) != keyword]


async def resolve_search_attributes(settings: Settings, client: Client) -> Settings:
    """`settings` with search_attributes `auto` turned into `on` (all registered) or `off` (said in one line).

    On the dev server `mint up` started (TEMPORAL_ADDRESS unset), what is missing is registered first."""
    own_server = settings.temporal_address is None
    if settings.search_attributes == "off" or (settings.search_attributes == "on" and not own_server):
        return settings
    namespace = settings.temporal_namespace
    missing = await missing_search_attributes(client, namespace)
    if missing and own_server and await _register(client, namespace, missing):
        missing = []
    if missing == []:
        return replace(settings, search_attributes="on")
    if settings.search_attributes == "on":
        return settings  # as the operator says, though the server would not tell
    if missing:
        commands = "; ".join(
            f"temporal operator search-attribute create --namespace {namespace} --name {name} --type Keyword"
            for name in missing
        )
        log.warning(
            "executions will not carry Mint's search attributes (the Temporal UI cannot filter by task, agent "
            "or status): namespace %r has not registered %s as Keyword. Register them (%s) and restart the "
            "API, or set MINT_SEARCH_ATTRIBUTES=off to say so",
            namespace,
            ", ".join(missing),
            commands,
        )
    return replace(settings, search_attributes="off")


async def _register(client: Client, namespace: str, names: list[str]) -> bool:
    """Register `names` as Keyword search attributes of `namespace` (Mint's own dev server); True if done."""
    keyword = IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD
    try:
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(namespace=namespace, search_attributes=dict.fromkeys(names, keyword))
        )
    except RPCError as exc:
        log.warning("cannot register search attributes on namespace %r: %s", namespace, exc.message)
        return False
    log.info("registered search attributes %s on namespace %r", ", ".join(names), namespace)
    return True
