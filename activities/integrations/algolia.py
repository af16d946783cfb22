"""`algolia`: search an Algolia index (POST /1/indexes/{index}/query on the application's DSN host, the
application id and key in X-Algolia-* headers). Julep's answer is {hits, metadata}."""

from __future__ import annotations

import re
from typing import TypedDict
from urllib.parse import quote

from activities.integrations.common import Service, answer_object, join
from contracts.json import JsonObject, JsonValue
from infra.temporal import errors

DEFAULT_BASE_URL = "https://{application_id}-dsn.algolia.net"
METHODS = ("search",)
APPLICATION_ID = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,50}[A-Za-z0-9])?", re.ASCII)
METADATA = ("nbHits", "page", "nbPages", "hitsPerPage", "processingTimeMS", "query", "params")


class Answer(TypedDict):
    hits: JsonValue
    metadata: JsonObject


async def call(service: Service, method: str, setup: JsonObject, arguments: JsonObject) -> Answer:
    application = str(setup["algolia_application_id"])
    # ASCII only: it becomes part of a host name, and str.isalnum() passes `⒈` (which IDNA turns into `1.`).
    if not APPLICATION_ID.fullmatch(application):
        raise errors.permanent("algolia_application_id must be letters and digits", "BadToolCall")
    body: JsonObject = {"query": str(arguments["query"])}
    body["hitsPerPage"] = arguments.get("hits_per_page") or 10
    if arguments.get("attributes_to_retrieve"):
        body["attributesToRetrieve"] = arguments["attributes_to_retrieve"]
    base = service.base_url.replace("{application_id}", application.lower())
    response = await service.fetch(
        {
            "method": "POST",
            "url": join(base, f"/1/indexes/{quote(str(arguments['index_name']), safe='')}/query"),
            "json": body,
            "headers": {
                "X-Algolia-Application-Id": application,
                "X-Algolia-API-Key": str(setup["algolia_api_key"]),
            },
        }
    )
    data = answer_object("Algolia", response)
    return {"hits": data.get("hits", []), "metadata": {k: data[k] for k in METADATA if k in data}}
