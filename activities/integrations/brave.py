"""`brave`: web search through the Brave Search API (GET /res/v1/web/search, the key in
X-Subscription-Token). Julep's answer is {result: [{title, link, snippet}]}."""

from __future__ import annotations

from typing import TypedDict

from activities.integrations.common import Service, answer_object, join, object_in, objects_in
from contracts.json import JsonObject

DEFAULT_BASE_URL = "https://api.search.brave.com"
METHODS = ("search",)


class Result(TypedDict):
    title: str
    link: str
    snippet: str


class Answer(TypedDict):
    result: list[Result]


async def call(service: Service, method: str, setup: JsonObject, arguments: JsonObject) -> Answer:
    response = await service.fetch(
        {
            "method": "GET",
            "url": join(service.base_url, "/res/v1/web/search"),
            "params": {"q": str(arguments["query"])},
            "headers": {"Accept": "application/json", "X-Subscription-Token": str(setup["brave_api_key"])},
        }
    )
    data = answer_object("Brave Search", response)
    results = objects_in(object_in(data.get("web")).get("results"))
    return {"result": [_result(r) for r in results]}


def _result(found: JsonObject) -> Result:
    title, link, snippet = (found.get(key, "") for key in ("title", "url", "description"))
    return {"title": str(title), "link": str(link), "snippet": str(snippet)}
