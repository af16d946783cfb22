"""`arxiv`: search arXiv through its export API (GET /api/query), which answers an Atom feed. The feed is
untrusted XML: a document type declaration (where entity expansion attacks live) is refused before parsing,
and the standard library's parser resolves no external entities. Julep's answer is {result: [{entry_id,
title, updated, published, authors, summary, comment, journal_ref, doi, primary_category, categories, links,
pdf_url}]}."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import TypedDict

from temporalio.exceptions import ApplicationError

from activities.integrations.common import Service, join, refused_with, whole_number
from contracts.json import JsonObject
from infra.temporal import errors

DEFAULT_BASE_URL = "https://export.arxiv.org"
METHODS = ("search",)
ATOM = "{http://www.w3.org/2005/Atom}"
ARXIV = "{http://arxiv.org/schemas/atom}"
SORT_BY = {"relevance", "lastUpdatedDate", "submittedDate"}
SORT_ORDER = {"ascending", "descending"}
DOCTYPE = re.compile(r"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)


class Entry(TypedDict):
    entry_id: str | None
    title: str | None
    updated: str | None
    published: str | None
    authors: list[str]
    summary: str | None
    comment: str | None
    journal_ref: str | None
    doi: str | None
    primary_category: str | None
    categories: list[str]
    links: list[str]
    pdf_url: str | None


class Answer(TypedDict):
    result: list[Entry]


async def call(service: Service, method: str, setup: JsonObject, arguments: JsonObject) -> Answer:
    response = await service.fetch(
        {"method": "GET", "url": join(service.base_url, "/api/query"), "params": _params(arguments)}
    )
    if response["status_code"] >= 400:
        raise refused_with("arXiv", response["status_code"], None, _summary_of(response["content"]))
    return {"result": [_entry(e) for e in _feed(response["content"]).iter(f"{ATOM}entry")]}


def _params(arguments: JsonObject) -> dict[str, str]:
    if arguments.get("download_pdf"):
        raise errors.permanent(
            "download_pdf is not supported: each result's pdf_url is the PDF's address", "BadToolCall"
        )
    sort_by = arguments.get("sort_by") or "relevance"
    sort_order = arguments.get("sort_order") or "descending"
    if sort_by not in SORT_BY or sort_order not in SORT_ORDER:
        raise errors.permanent(
            f"sort_by must be one of {', '.join(sorted(SORT_BY))} and sort_order ascending or descending",
            "BadToolCall",
        )
    try:
        limit = whole_number(arguments.get("max_results") or 5)
    except (TypeError, ValueError):
        raise errors.permanent("max_results must be a whole number", "BadToolCall") from None
    params = {
        "search_query": str(arguments.get("query") or ""),
        "start": "0",
        "max_results": str(max(1, min(limit, 300_000))),
        "sortBy": sort_by,
        "sortOrder": sort_order,
    }
    ids = arguments.get("id_list")
    if ids:
        params["id_list"] = ",".join(str(i) for i in (ids if isinstance(ids, list) else [ids]))
    return params


def _feed(text: str) -> ET.Element:
    if DOCTYPE.search(text):
        raise errors.permanent("arXiv answered XML with a document type declaration: refused", "BadAnswer")
    try:
        return ET.fromstring(text)
    except ET.ParseError as exc:
        raise errors.permanent(f"arXiv answered XML that cannot be read: {exc}", "BadAnswer") from None


def _summary_of(text: str) -> str:
    """arXiv's error answers are feeds too, the message in an entry's summary."""
    try:
        summary = _feed(text).find(f"{ATOM}entry/{ATOM}summary")
    except ApplicationError:
        return text[:300]
    return (summary.text or "").strip() if summary is not None else text[:300]


def _text(entry: ET.Element, tag: str) -> str | None:
    found = entry.find(tag)
    return " ".join(found.text.split()) if found is not None and found.text else None


def _entry(entry: ET.Element) -> Entry:
    links = [link.get("href", "") for link in entry.findall(f"{ATOM}link")]
    pdf = next(
        (link.get("href") for link in entry.findall(f"{ATOM}link") if link.get("title") == "pdf"), None
    )
    primary = entry.find(f"{ARXIV}primary_category")
    return {
        "entry_id": _text(entry, f"{ATOM}id"),
        "title": _text(entry, f"{ATOM}title"),
        "updated": _text(entry, f"{ATOM}updated"),
        "published": _text(entry, f"{ATOM}published"),
        "authors": [_text(a, f"{ATOM}name") or "" for a in entry.findall(f"{ATOM}author")],
        "summary": _text(entry, f"{ATOM}summary"),
        "comment": _text(entry, f"{ARXIV}comment"),
        "journal_ref": _text(entry, f"{ARXIV}journal_ref"),
        "doi": _text(entry, f"{ARXIV}doi"),
        "primary_category": primary.get("term") if primary is not None else None,
        "categories": [c.get("term", "") for c in entry.findall(f"{ATOM}category")],
        "links": links,
        "pdf_url": pdf,
    }
