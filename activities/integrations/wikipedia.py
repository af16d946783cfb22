"""`wikipedia`: search Wikipedia through the MediaWiki Action API (GET /w/api.php, a search generator with
each page's plain-text introduction). Julep's answer is {documents: [{page_content, metadata: {title,
summary, source}}]}, LangChain's documents."""

from __future__ import annotations

from typing import TypedDict

from activities.integrations.common import Service, answer_object, join, object_in, objects_in, whole_number
from contracts.json import JsonObject, JsonValue
from infra.temporal import errors

DEFAULT_BASE_URL = "https://en.wikipedia.org"
METHODS = ("search",)
# Wikimedia asks every client to name itself (its User-Agent policy).
USER_AGENT = "Mint/1 (durable agent workflows; integration wikipedia)"


class Metadata(TypedDict):
    title: JsonValue
    summary: JsonValue
    source: JsonValue


class Document(TypedDict):
    page_content: JsonValue
    metadata: Metadata
    type: str


class Answer(TypedDict):
    documents: list[Document]


async def call(service: Service, method: str, setup: JsonObject, arguments: JsonObject) -> Answer:
    try:
        limit = max(1, min(whole_number(arguments.get("load_max_docs", 2)), 50))
    except (TypeError, ValueError):
        raise errors.permanent("load_max_docs must be a whole number", "BadToolCall") from None
    params = {
        "action": "query",
        "format": "json",
        "formatversion": "2",
        "generator": "search",
        "gsrsearch": str(arguments["query"]),
        "gsrlimit": str(limit),
        "prop": "extracts|info",
        "exintro": "1",
        "explaintext": "1",
        "inprop": "url",
    }
    response = await service.fetch(
        {
            "method": "GET",
            "url": join(service.base_url, "/w/api.php"),
            "params": params,
            "headers": {"User-Agent": USER_AGENT},
        }
    )
    data = answer_object("Wikipedia", response)
    error = data.get("error")
    if isinstance(error, dict):  # MediaWiki errors come with a 200
        raise errors.permanent(
            f"Wikipedia refused the search: {error.get('info') or error.get('code')}", "IntegrationRefused"
        )
    pages = sorted(objects_in(object_in(data.get("query")).get("pages")), key=_index)
    return {"documents": [_document(p) for p in pages]}


def _index(page: JsonObject) -> float:
    index = page.get("index", 0)
    return index if isinstance(index, int | float) else 0


def _document(page: JsonObject) -> Document:
    text = page.get("extract") or ""
    metadata: Metadata = {"title": page.get("title", ""), "summary": text, "source": page.get("fullurl", "")}
    return {"page_content": text, "metadata": metadata, "type": "Document"}
