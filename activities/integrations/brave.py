"""`brave`: web search through the Brave Search API (GET /res/v1/web/search, the key in
X-Subscription-Token). Julep's answer is {result: [{title, link, snippet}]}."""

from __future__ import annotations

from typing import Any

from activities.integrations.common import answer_json, join

DEFAULT_BASE_URL = "https://api.search.brave.com"


async def call(service: Any, method: str, setup: dict[str, Any], arguments: dict[str, Any]) -> Any:
    response = await service.fetch(
        {
            "method": "GET",
            "url": join(service.base_url, "/res/v1/web/search"),
            "params": {"q": str(arguments["query"])},
            "headers": {"Accept": "application/json", "X-Subscription-Token": setup["brave_api_key"]},
        }
    )
    data = answer_json("Brave Search", response)
    results = ((data.get("web") or {}).get("results") or []) if isinstance(data, dict) else []
    return {
        "result": [
            {"title": r.get("title", ""), "link": r.get("url", ""), "snippet": r.get("description", "")}
            for r in results
            if isinstance(r, dict)
        ]
    }
