"""Settings from the environment (mint/settings.py): defaults when unset, what an empty variable means, and
errors that name the variable without quoting a secret."""

from __future__ import annotations

import dataclasses

import pytest

from mint.settings import Settings


def test_unset_variables_leave_the_defaults(monkeypatch):
    for name in ("MINT_API_PORT", "MINT_DEFAULT_MODEL", "MINT_ENCRYPTION_KEY", "MINT_EGRESS_ALLOW"):
        monkeypatch.delenv(name, raising=False)
    settings = Settings.from_env()
    assert (settings.api_port, settings.default_model) == (8080, "gpt-4o-mini")
    assert (settings.encryption_keys, settings.egress_allow) == ((), ())


def test_variables_are_parsed(monkeypatch):
    monkeypatch.setenv("MINT_API_PORT", "9000")
    monkeypatch.setenv("MINT_EGRESS_ALLOW", " 10.0.0.1, db:5432 ,,")
    monkeypatch.setenv("MINT_MODEL_ENDPOINTS", "ollama=http://127.0.0.1:11434/v1, bad")
    monkeypatch.setenv("MINT_MCP_SERVERS", '{"calc": {"command": "python"}}')
    monkeypatch.setenv("MINT_RECONCILE_QUIET", "2.5")
    settings = Settings.from_env()
    assert settings.api_port == 9000 and settings.reconcile_quiet == 2.5
    assert settings.egress_allow == ("10.0.0.1", "db:5432")
    assert settings.model_endpoints == (("ollama", "http://127.0.0.1:11434/v1"),)
    assert settings.mcp_servers == {"calc": {"command": "python"}}


def test_an_empty_variable_means_what_it_always_has(monkeypatch):
    # Empty names a default for these (they are read as `value or default`)...
    monkeypatch.setenv("MINT_DEFAULT_MODEL", "")
    monkeypatch.setenv("MINT_API_KEY", "")
    # ...and is kept as it is for these.
    monkeypatch.setenv("MINT_TASK_QUEUE", "")
    settings = Settings.from_env()
    assert settings.default_model == "gpt-4o-mini" and settings.api_key is None
    assert settings.task_queue == ""


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("MINT_API_PORT", "eighty", "MINT_API_PORT: Input should be a valid integer"),
        ("MINT_MAX_TOOL_TIMEOUT_SECONDS", "0", "MINT_MAX_TOOL_TIMEOUT_SECONDS must be more than 0"),
        ("MINT_MCP_SERVERS", "[1]", "MINT_MCP_SERVERS must be a JSON object"),
        ("MINT_ENCRYPTION_KEY", "a-short-secret", "MINT_ENCRYPTION_KEY: each key must be at least"),
    ],
)
def test_a_bad_value_names_its_variable(monkeypatch, name, value, message):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError) as raised:
        Settings.from_env()
    assert str(raised.value).startswith(message)
    if "SECRET" in value.upper():
        assert value not in str(raised.value)


def test_settings_stay_a_plain_frozen_value():
    settings = dataclasses.replace(Settings(), api_port=1)
    assert settings.api_port == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.api_port = 2  # type: ignore[misc]


def test_integration_base_urls_and_the_smtp_server_come_from_their_variables(monkeypatch):
    monkeypatch.setenv("MINT_WEATHER_BASE_URL", " http://proxy.internal/weather ")
    monkeypatch.setenv("MINT_BRAVE_BASE_URL", "")  # empty: the service itself
    monkeypatch.setenv("MINT_SMTP_HOST", "mail.internal")
    monkeypatch.setenv("MINT_SMTP_PORT", "2525")
    settings = Settings.from_env()
    assert settings.integration_base_urls["weather"] == "http://proxy.internal/weather"
    assert "brave" not in settings.integration_base_urls
    assert (settings.smtp_host, settings.smtp_port) == ("mail.internal", 2525)
