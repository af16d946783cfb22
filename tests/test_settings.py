"""Settings from the environment (infra/settings/): defaults when unset, what an empty variable means, and
errors that name the variable without quoting a secret."""

from __future__ import annotations

import dataclasses

import pytest

from infra.settings import Settings


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


# Secrets that are placeholders or that share a value are refused at start.

STRONG = "a-real-secret-0123456789abcdefghijklmnop"
OTHER = "another-secret-0123456789abcdefghijklmno"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MINT_ENCRYPTION_KEY", "CHANGE-ME-32-or-more-random-characters"),
        ("MINT_ENCRYPTION_KEY", f"{STRONG},change-me-the-old-key-0123456789abcdef"),
        ("MINT_CODEC_TOKEN", "CHANGE-ME-32-or-more-random-characters"),
        ("MINT_CODEC_TOKEN", "change_me"),  # refused as a placeholder before it is refused as short
        ("MINT_METRICS_TOKEN", "ChangeMe-0123456789abcdefghijklmnopqrstuv"),
        ("MINT_API_KEY", "CHANGE-ME-mint-api-key"),
        ("MINT_DATABASE_URL", "postgresql://mint:CHANGE-ME@postgres.example.internal:5432/mint"),
        ("TEMPORAL_API_KEY", "changeme"),
        ("OPENAI_API_KEY", "sk-CHANGE-ME"),
        ("ANTHROPIC_API_KEY", "CHANGE ME"),
    ],
)
def test_a_secret_that_still_holds_a_placeholder_is_refused_in_a_line_naming_it(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError) as raised:
        Settings.from_env()
    message = str(raised.value)
    assert message.startswith(f"{name} still holds an example's CHANGE-ME placeholder"), message
    assert "\n" not in message and value not in message


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MINT_DATABASE_URL", "postgresql://mint:pw@exchange-meetings.internal:5432/mint"),
        ("MINT_CODEC_TOKEN", "interchangement-0123456789abcdefghijklmno"),
        ("MINT_DEFAULT_MODEL", "change-me"),  # not a secret: the model's own check is elsewhere
    ],
)
def test_change_me_inside_a_word_or_outside_a_secret_is_no_placeholder(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    Settings.from_env()


@pytest.mark.parametrize(
    ("first", "first_value", "second", "second_value"),
    [
        ("MINT_ENCRYPTION_KEY", STRONG, "MINT_CODEC_TOKEN", STRONG),
        ("MINT_ENCRYPTION_KEY", f"{OTHER},{STRONG}", "MINT_CODEC_TOKEN", STRONG),  # a retired key too
        ("MINT_API_KEY", STRONG, "MINT_CODEC_TOKEN", STRONG),
        ("MINT_CODEC_TOKEN", STRONG, "MINT_METRICS_TOKEN", STRONG),
        ("MINT_ENCRYPTION_KEY", STRONG, "MINT_METRICS_TOKEN", STRONG),
    ],
)
def test_two_secrets_with_one_value_are_refused(monkeypatch, first, first_value, second, second_value):
    monkeypatch.setenv(first, first_value)
    monkeypatch.setenv(second, second_value)
    with pytest.raises(ValueError) as raised:
        Settings.from_env()
    message = str(raised.value)
    assert message.startswith(f"{first} and {second} have the same value"), message
    assert STRONG not in message and "\n" not in message


def test_distinct_secrets_start_and_the_metrics_token_is_checked_like_the_codec_token(monkeypatch):
    monkeypatch.setenv("MINT_ENCRYPTION_KEY", f"{STRONG},{STRONG}")  # one key twice: no second secret
    monkeypatch.setenv("MINT_CODEC_TOKEN", OTHER)
    monkeypatch.setenv("MINT_METRICS_TOKEN", "metrics-secret-0123456789abcdefghijklmn")
    settings = Settings.from_env()
    assert settings.metrics_token == "metrics-secret-0123456789abcdefghijklmn"
    assert settings.metrics_port_token() == settings.metrics_token
    assert dataclasses.replace(settings, metrics_token=None).metrics_port_token() == OTHER
    monkeypatch.setenv("MINT_METRICS_TOKEN", "short")
    with pytest.raises(ValueError, match="MINT_METRICS_TOKEN must be at least 32 characters"):
        Settings.from_env()


@pytest.mark.parametrize("command", ["api", "worker"])
def test_mint_api_and_worker_refuse_a_placeholder_in_one_line(command):
    from click.testing import CliRunner

    from process.cli import cli
    from process.exit_codes import ExitCode

    env = {
        "MINT_DATABASE_URL": "postgresql://mint:pw@127.0.0.1:1/mint",
        "TEMPORAL_ADDRESS": "127.0.0.1:1",
        "MINT_ENCRYPTION_KEY": "CHANGE-ME-32-or-more-random-characters",
        "MINT_PARENT_PID": None,
    }
    result = CliRunner().invoke(cli, [command], env=env)
    assert result.exit_code == ExitCode.ERROR, result.output
    assert result.output.strip().splitlines() == [
        "Error: MINT_ENCRYPTION_KEY still holds an example's CHANGE-ME placeholder: set a real value"
    ]
