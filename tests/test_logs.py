"""Logs: plain lines or JSON lines (MINT_LOG_FORMAT) naming the execution, workflow and activity; a failure
Mint expected is one line with no traceback, in a real `mint up` too."""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from temporalio.exceptions import ApplicationError

from activities.observe import is_expected
from infra.settings import Settings
from infra.telemetry.logs import JsonFormatter, PlainFormatter, RecordContext, setup_logging
from infra.temporal import errors
from tests.stack import MintUp

ACTIVITY = {
    "activity_id": "1",
    "activity_type": "call_in_worker",
    "attempt": 2,
    "namespace": "default",
    "task_queue": "mint-tasks",
    "workflow_id": "9f6da74b-0dd2-4f61-9668-84b29d35721a.chunk.5",
    "workflow_run_id": "run",
    "workflow_type": "MapChunkWorkflow",
}


def _record(message: str, exc_info=None, **extra) -> logging.LogRecord:
    record = logging.LogRecord("mint.test", logging.WARNING, __file__, 1, message, (), exc_info)
    record.__dict__.update(extra)
    RecordContext().filter(record)
    return record


def test_a_json_line_names_the_execution_workflow_and_activity():
    line = JsonFormatter().format(_record("call failed: %s", temporal_activity=ACTIVITY))
    entry = json.loads(line)
    assert "\n" not in line
    assert (
        entry["level"] == "WARNING" and entry["logger"] == "mint.test" and entry["message"].startswith("call")
    )
    assert entry["execution_id"] == "9f6da74b-0dd2-4f61-9668-84b29d35721a"  # a chunk's is its parent's
    assert entry["workflow"] == "MapChunkWorkflow" and entry["activity"] == "call_in_worker"
    assert entry["attempt"] == 2 and entry["time"].endswith("+00:00") and "exception" not in entry


def test_a_json_line_carries_the_traceback_as_text():
    try:
        raise KeyError("surprise")
    except KeyError:
        record = _record("unexpected", exc_info=sys.exc_info())
    entry = json.loads(JsonFormatter().format(record))
    assert "Traceback" in entry["exception"] and "KeyError: 'surprise'" in entry["exception"]
    assert "execution_id" not in entry  # outside any workflow


def test_the_plain_format_is_one_readable_line():
    line = PlainFormatter().format(_record("hello %s"))
    assert line.endswith("WARNING mint.test: hello %s") and "\n" not in line


@pytest.fixture
def root_logger_restored() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    setup_logging("plain")  # the SDK's loggers back to putting their context in the message
    root.handlers[:] = handlers
    root.setLevel(level)


def test_setup_logging_makes_every_logger_write_json_lines(root_logger_restored, capsys):
    setup_logging("json", "info")
    setup_logging("json", "info")  # a second call replaces the handler: still one line a record
    logging.getLogger("anything").info("one %d", 1)
    logging.getLogger("anything").debug("below the level")
    lines = capsys.readouterr().err.splitlines()
    assert [json.loads(line)["message"] for line in lines] == ["one 1"]


def test_the_format_and_level_are_checked(monkeypatch):
    monkeypatch.setenv("MINT_LOG_FORMAT", "JSON")
    monkeypatch.setenv("MINT_LOG_LEVEL", "warning")
    settings = Settings.from_env()
    assert (settings.log_format, settings.log_level) == ("json", "WARNING")
    monkeypatch.setenv("MINT_LOG_FORMAT", "xml")
    with pytest.raises(ValueError, match="MINT_LOG_FORMAT must be plain or json"):
        Settings.from_env()


def test_only_errors_mint_raises_on_purpose_are_expected():
    assert is_expected(errors.permanent("no model", "ModelNotConfigured"))
    assert is_expected(errors.transient("it answered 503", "HttpUnavailable"))
    assert not is_expected(ApplicationError("a bug", type="InvalidTransition", non_retryable=True))
    assert not is_expected(KeyError("a bug"))


def test_mint_up_logs_an_expected_failure_in_one_json_line(tmp_path):
    """A prompt step whose model is not configured: one JSON line, no traceback anywhere; and the API's
    /metrics includes the worker's count of that failed call."""
    up = MintUp(tmp_path / "data", MINT_LOG_FORMAT="json", OPENAI_API_KEY="", ANTHROPIC_API_KEY="")
    try:
        up.start()
        execution_id = _run_a_prompt_without_a_model(up)
        token = (up.data_dir / "codec_token").read_text().strip()
        scraped = httpx.get(f"{up.url}/metrics", headers={"Authorization": f"Bearer {token}"}, timeout=30)
        assert scraped.status_code == 200, scraped.text
        families = {f.name: f for f in text_string_to_metric_families(scraped.text)}
        calls = [s for s in families["mint_calls"].samples if s.labels.get("outcome") == "ModelNotConfigured"]
        assert [(s.labels["process"], s.labels["kind"], s.value) for s in calls] == [("worker", "model", 1.0)]
    finally:
        _, output = up.stop()
    assert "Traceback" not in output, output
    mentions = [line for line in output.splitlines() if "ModelNotConfigured" in line]
    assert len(mentions) == 1, output
    entry = json.loads(mentions[0])
    assert entry["level"] == "INFO" and entry["logger"] == "mint.activities", entry
    assert entry["execution_id"] == execution_id and "OPENAI_API_KEY" in entry["message"]
    assert all(json.loads(line) for line in output.splitlines() if line.startswith("{"))


def _run_a_prompt_without_a_model(up: MintUp) -> str:
    headers = {"Authorization": f"Bearer {up.key}"}
    agent = httpx.post(f"{up.url}/agents", json={"name": "a"}, headers=headers).json()
    task = {"name": "asks", "main": [{"prompt": "hello", "unwrap": True}]}
    task = httpx.post(f"{up.url}/agents/{agent['id']}/tasks", json=task, headers=headers).json()
    started = httpx.post(f"{up.url}/tasks/{task['id']}/executions", json={"input": {}}, headers=headers)
    execution_id = started.json()["id"]
    deadline = time.monotonic() + 60
    while (execution := httpx.get(f"{up.url}/executions/{execution_id}", headers=headers).json())[
        "status"
    ] not in ("failed", "succeeded"):
        assert time.monotonic() < deadline, execution
        time.sleep(0.2)
    assert execution["status"] == "failed" and "no OpenAI model is configured" in execution["error"], (
        execution
    )
    return execution_id
