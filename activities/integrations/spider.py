"""`spider`: crawl, scrape links or screenshot a site through spider.cloud's API (POST /crawl, /links,
/screenshot, /search with a JSON body, the key as a bearer token). Julep's answer is {result: [...]}, the
pages as Spider returns them ({content, url, status, error, costs})."""

from __future__ import annotations

from typing import Any

from activities.integrations.common import answer_json, join
from infra.temporal import errors

DEFAULT_BASE_URL = "https://api.spider.cloud"


async def call(service: Any, method: str, setup: dict[str, Any], arguments: dict[str, Any]) -> Any:
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
