"""`wikipedia`: search Wikipedia through the MediaWiki Action API (GET /w/api.php, a search generator with
each page's plain-text introduction). Julep's answer is {documents: [{page_content, metadata: {title,
summary, source}}]}, LangChain's documents."""

from __future__ import annotations

from typing import Any

from activities.integrations.common import answer_json, join
from infra.temporal import errors

DEFAULT_BASE_URL = "https://en.wikipedia.org"
# Wikimedia asks every client to name itself (its User-Agent policy).
USER_AGENT = "Mint/1 (durable agent workflows; integration wikipedia)"


async def call(service: Any, method: str, setup: dict[str, Any], arguments: dict[str, Any]) -> Any:
    try:
        limit = max(1, min(int(arguments.get("load_max_docs", 2)), 50))
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
    data = answer_json("Wikipedia", response)
    if isinstance(data, dict) and isinstance(data.get("error"), dict):  # MediaWiki errors come with a 200
        error = data["error"]
        raise errors.permanent(
            f"Wikipedia refused the search: {error.get('info') or error.get('code')}", "IntegrationRefused"
        )
    pages = ((data.get("query") or {}).get("pages") or []) if isinstance(data, dict) else []
    pages = sorted((p for p in pages if isinstance(p, dict)), key=lambda p: p.get("index", 0))
    return {"documents": [_document(p) for p in pages]}


def _document(page: dict[str, Any]) -> dict[str, Any]:
    text = page.get("extract") or ""
    metadata = {"title": page.get("title", ""), "summary": text, "source": page.get("fullurl", "")}
    return {"page_content": text, "metadata": metadata, "type": "Document"}
