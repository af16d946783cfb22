"""Whether executions carry Mint's search attributes, decided once when the API starts.

A workflow started with (or upserting) a search attribute its namespace has not registered is refused, so
with MINT_SEARCH_ATTRIBUTES=auto (the default) the API asks the namespace which ones it has, once, and sets
them only when all of Mint's are there. `mint up` registers them on its dev server; a cluster Mint does not
manage needs an operator to (README, "The Temporal UI").
"""

from __future__ import annotations

import logging
from dataclasses import replace

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client
from temporalio.service import RPCError

from contracts.temporal import SEARCH_ATTRIBUTES
from mint.settings import Settings

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
    """`settings` with search_attributes `auto` turned into `on` (all registered) or `off` (said in one line)."""
    if settings.search_attributes != "auto":
        return settings
    namespace = settings.temporal_namespace
    missing = await missing_search_attributes(client, namespace)
    if missing == []:
        return replace(settings, search_attributes="on")
    if missing:
        commands = "; ".join(
            f"temporal operator search-attribute create --namespace {namespace} --name {name} --type Keyword"
            for name in missing
        )
        log.warning(
            "executions will not carry Mint's search attributes (the Temporal UI cannot filter by task, agent "
            "or status): namespace %r has not registered %s as Keyword. Register them (%s) and restart the API, or set "
            "MINT_SEARCH_ATTRIBUTES=off to say so",
            namespace,
            ", ".join(missing),
            commands,
        )
    return replace(settings, search_attributes="off")
