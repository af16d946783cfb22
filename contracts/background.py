"""The payloads of the small workflows the API starts beside executions: indexing a doc, compressing a
session, and running one tool for a session chat. Field names are part of recorded histories."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contracts.calls import Owner
from contracts.json import JsonObject


@dataclass
class DocRef:
    """IndexDocWorkflow's input and index_doc's: the doc to embed."""

    developer_id: str
    doc_id: str


@dataclass
class IndexedDoc:
    """index_doc's result (and IndexDocWorkflow's): how many chunks were embedded, and with which model."""

    chunks: int
    model: str


@dataclass
class DocFailure:
    """mark_doc_failed's input: the doc, and why embedding it failed."""

    developer_id: str
    doc_id: str
    error: str


@dataclass
class SessionRef:
    """CompressSessionWorkflow's input and compress_session's: the session to compress, and the tokens its
    history should come under (its share of the adaptive threshold: START x budget less the system message,
    or less when a chat waits on it); None (runs recorded before) compresses one round."""

    developer_id: str
    session_id: str
    target_tokens: int | None = None


@dataclass
class Compressed:
    """compress_session's result (and CompressSessionWorkflow's): how many entries summarizer entries
    replaced."""

    folded: int


@dataclass
class RunToolRequest:
    """RunToolWorkflow's input: one server-side tool call for a chat's tool loop; its result is the tool's
    output."""

    owner: Owner
    tool: JsonObject  # the tool as the API stores it (a ToolDef dumped by alias; workflows/tool_kinds.py reads it)
    arguments: Any
    max_tool_timeout: float | None = None
