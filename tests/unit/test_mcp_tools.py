"""Tasks as MCP tools (services/mcp_tools.py), without a server: their names, schemas and call answers."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from contracts.json import JsonValue
from contracts.records.executions import Execution
from infra.store.task_catalog import CatalogEntry
from services.mcp_tools import answer, safe_name, tool_names, tool_schema

MCP_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _entry(name: str, number: int) -> CatalogEntry:
    return CatalogEntry(f"{number:08x}-0000-4000-8000-000000000000", name)


def test_every_name_is_mcp_safe_and_unique_and_the_oldest_keeps_the_plain_one():
    names = ["daily motivation", "daily motivation", "daily_motivation", "Ünïcödé?!", "", "   ", "a" * 300]
    names += ["🙂", "weird/name.with:chars", "daily_motivation_00000002", "-ok-"]
    entries = [_entry(name, i + 1) for i, name in enumerate(names)]
    found = tool_names(entries)
    assert len(found) == len(entries) and all(MCP_NAME.match(n) for n in found)
    by_task = {task: name for name, task in found.items()}
    assert by_task[entries[0].id] == "daily_motivation"  # the oldest
    assert by_task[entries[1].id] == "daily_motivation_00000002"  # then the start of its id
    assert by_task[entries[2].id] == "daily_motivation_00000003"
    assert by_task[entries[9].id] == "daily_motivation_00000002_0000000a"  # named like another's unique name
    assert by_task[entries[3].id] == "Unicode"
    assert by_task[entries[4].id] == "task" and by_task[entries[5].id].startswith("task_")
    assert by_task[entries[6].id] == "a" * 64
    assert by_task[entries[8].id] == "weird_name_with_chars" and by_task[entries[10].id] == "-ok-"


def test_names_stay_as_tasks_are_added():
    entries = [_entry("report", 1), _entry("report", 2)]
    before = tool_names(entries)
    after = tool_names([*entries, _entry("report", 3), _entry("other", 4)])
    assert before.items() <= after.items()
    assert safe_name("x" * 65) == "x" * 64


def test_a_tools_schema_is_the_tasks_object_schema_or_an_open_object():
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    assert tool_schema(schema) == schema
    assert tool_schema({"properties": {"n": {}}}) == {"type": "object", "properties": {"n": {}}}
    for other in (None, {"type": "string"}, ["not", "a", "schema"], "text", {"type": ["object", "null"]}):
        assert tool_schema(other) == {"type": "object"}


def _execution(status: str, output: JsonValue = None, error: str | None = None) -> Execution:
    now = datetime.now(UTC)
    return Execution("e-1", "t-1", 1, status, {}, {}, now, now, output=output, error=error)


def test_answers_by_status():
    done = answer(_execution("succeeded", {"a": 1}), 60)
    assert (done.text, done.structured, done.is_error) == ('{"a": 1}', {"a": 1}, False)
    assert answer(_execution("succeeded", "plain text"), 60).structured == {"result": "plain text"}
    assert answer(_execution("succeeded", [1, 2]), 60).text == "[1, 2]"
    failed = answer(_execution("failed", error="BudgetExceeded: out"), 60)
    assert failed.is_error and failed.text == "BudgetExceeded: out" and failed.structured
    assert failed.structured["status"] == "failed"
    assert answer(_execution("cancelled"), 60).is_error
    running = answer(_execution("running"), 2.5)
    assert not running.is_error and running.structured == {
        "id": "e-1",
        "execution_id": "e-1",
        "status": "running",
    }
    assert "e-1" in running.text and "2.5 s" in running.text
    assert "awaiting input" in answer(_execution("awaiting_input"), 60).text
