"""`spider`: crawl, scrape links or screenshot a site through spider.cloud's API (POST /crawl, /links,
/screenshot, /search with a JSON body, the key as a bearer token). Julep's answer is {result: [...]}, the
pages as Spider returns them ({content, url, status, error, costs})."""

from __future__ import annotations

from typing import TypedDict

from activities.integrations.common import Service, answer_json, join
from contracts.json import JsonObject, JsonValue
from infra.temporal import errors

DEFAULT_BASE_URL = "https://api.spider.cloud"
METHODS = ("crawl", "links", "screenshot", "search")


class Answer(TypedDict):
    result: list[JsonValue]  # the pages, as Spider answers them


async def call(service: Service, method: str, setup: JsonObject, arguments: JsonObject) -> Answer:
    params = arguments.get("params") or {}
    if not isinstance(params, dict):
        raise errors.permanent("spider's `params` must be a mapping of Spider API options", "BadToolCall")
    if arguments.get("content_type") not in (None, "application/json"):
        raise errors.permanent(
            "spider's content_type may only be application/json: Mint reads Spider's JSON answers",
            "BadToolCall",
        )
    # `search` takes its query where the other methods take the URL.
    target = {"search": arguments["url"]} if method == "search" else {"url": str(arguments["url"])}
    response = await service.fetch(
        {
            "method": "POST",
            "url": join(service.base_url, f"/{method}"),
            "json": {**params, **target},
            "headers": {
                "Authorization": f"Bearer {setup['spider_api_key']}",
                "Content-Type": "application/json",
            },
        }
    )
    data = answer_json("Spider", response)
    return {"result": data if isinstance(data, list) else [data]}
