"""Sizing workers (infra/settings/, process/worker_options.py): the queues a deployment gives kinds of
activity, what each worker polls, its MINT_WORKER_* limits and their flags."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from contracts.temporal import (
    CALL_API,
    CALL_INTEGRATION,
    CALL_MCP,
    CALL_MODEL,
    LIST_MCP_TOOLS,
    WRITE_TRANSITIONS,
)
from infra.settings import Settings
from process.cli import cli
from process.exit_codes import ExitCode

WORKER_VARIABLES = (
    "MINT_MODEL_QUEUE",
    "MINT_HTTP_QUEUE",
    "MINT_WRITE_QUEUE",
    "MINT_WORKER_QUEUES",
    "MINT_WORKER_MAX_WORKFLOW_TASKS",
    "MINT_WORKER_MAX_ACTIVITIES",
    "MINT_WORKER_MAX_LOCAL_ACTIVITIES",
    "MINT_WORKER_MAX_MODEL_CALLS",
    "MINT_TASK_QUEUE",
)


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    for name in WORKER_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_by_default_everything_runs_on_one_queue():
    settings = Settings.from_env()
    assert settings.activity_queues() == {}
    assert settings.polled_queues() == {"mint-tasks": ("workflows",)}
    assert (settings.worker_max_activities, settings.worker_max_local_activities) == (1000, 1000)
    assert (settings.worker_max_workflow_tasks, settings.worker_max_model_calls) == (100, 0)


def test_kinds_with_queues_of_their_own(monkeypatch):
    monkeypatch.setenv("MINT_MODEL_QUEUE", "mint-models")
    monkeypatch.setenv("MINT_HTTP_QUEUE", "mint-http")
    monkeypatch.setenv("MINT_WRITE_QUEUE", "mint-tasks")  # the main queue: not a queue of its own
    settings = Settings.from_env()
    assert settings.activity_queues() == {
        CALL_MODEL: "mint-models",
        CALL_API: "mint-http",
        CALL_MCP: "mint-http",
        LIST_MCP_TOOLS: "mint-http",
        CALL_INTEGRATION: "mint-http",
    }
    assert WRITE_TRANSITIONS not in settings.activity_queues()
    assert settings.polled_queues() == {
        "mint-tasks": ("workflows", "writes"),
        "mint-models": ("models",),
        "mint-http": ("http",),
    }
    monkeypatch.setenv("MINT_WORKER_QUEUES", "models")
    assert Settings.from_env().polled_queues() == {"mint-models": ("models",)}


def test_limits_are_read_and_checked(monkeypatch):
    monkeypatch.setenv("MINT_WORKER_MAX_ACTIVITIES", "50")
    monkeypatch.setenv("MINT_WORKER_MAX_MODEL_CALLS", "8")
    settings = Settings.from_env()
    assert (settings.worker_max_activities, settings.worker_max_model_calls) == (50, 8)
    monkeypatch.setenv("MINT_WORKER_MAX_LOCAL_ACTIVITIES", "0")
    with pytest.raises(ValueError, match="must be at least 1, not '0'"):
        Settings.from_env()
    monkeypatch.delenv("MINT_WORKER_MAX_LOCAL_ACTIVITIES")
    monkeypatch.setenv("MINT_WORKER_QUEUES", "workflows,gpus")
    with pytest.raises(
        ValueError, match="unknown queue 'gpus'; the queues are workflows, models, http, writes"
    ):
        Settings.from_env()


def test_a_worker_that_would_poll_nothing_is_refused():
    settings = dataclasses.replace(Settings(), worker_queues=("models",))
    with pytest.raises(ValueError, match="polls no queue.*MINT_MODEL_QUEUE"):
        settings.polled_queues()


def test_the_worker_flags_override_the_environment_and_are_checked(tmp_path):
    env = {
        "MINT_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none",
        "TEMPORAL_ADDRESS": "127.0.0.1:1",
    }
    result = CliRunner().invoke(cli, ["worker", "--queues", "models"], env=env)
    assert result.exit_code != 0 and "polls no queue" in result.output
    result = CliRunner().invoke(cli, ["worker", "--queues", "workflows,gpus"], env=env)
    assert result.exit_code != 0 and "--queues: unknown queue 'gpus'" in result.output
    result = CliRunner().invoke(cli, ["worker", "--max-activities", "0"], env=env)
    assert result.exit_code != 0 and "--max-activities" in result.output


def test_absurd_sizes_and_an_unreachable_postgres_are_one_line_errors():
    env = {
        "MINT_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none",
        "TEMPORAL_ADDRESS": "127.0.0.1:1",
    }
    result = CliRunner().invoke(cli, ["worker", "--max-activities", str(10**23)], env=env)
    assert result.exit_code == ExitCode.USAGE and "1<=x<=1000000" in result.output
    result = CliRunner().invoke(cli, ["worker"], env={**env, "MINT_WORKER_MAX_ACTIVITIES": str(10**23)})
    assert result.exit_code == ExitCode.ERROR and "must be at most 1,000,000" in result.output
    # In a process of its own: getting that far sets up the process's logging.
    command = [sys.executable, "-m", "process.cli", "worker"]
    ran = subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
    assert ran.returncode == ExitCode.ERROR, ran.stderr
    (line,) = ran.stderr.strip().splitlines()  # one line, no traceback
    assert line.startswith("Error: cannot connect to Postgres (MINT_DATABASE_URL): "), line
