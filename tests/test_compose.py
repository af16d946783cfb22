"""docker-compose.yml, read as data (no Docker engine runs the tests): Temporal and its UI, which do not
authenticate, are never published on the network, and nothing the UI is told opens the codec server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

COMPOSE = Path(__file__).parent.parent / "docker-compose.yml"
LOOPBACK = {"127.0.0.1", "::1", "[::1]", "localhost"}


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())["services"]


def _host_ips(service: dict[str, Any]) -> list[str]:
    """The host address of each published port ("" for every interface), short or long syntax."""
    ips = []
    for port in service.get("ports", []):
        if isinstance(port, dict):
            ips.append(str(port.get("host_ip", "")))
        else:
            parts = str(port).rsplit(":", 2)
            ips.append(parts[0] if len(parts) == 3 else "")
    return ips


def test_temporal_is_not_published(services):
    temporal = services["temporal"]
    assert _host_ips(temporal) == [] and temporal.get("network_mode") != "host"


def test_the_ui_is_published_on_loopback_only(services):
    ui = services["temporal-ui"]
    assert _host_ips(ui) and set(_host_ips(ui)) <= LOOPBACK
    assert ui.get("network_mode") != "host"


def test_the_uis_codec_endpoint_carries_no_secret_and_sends_the_operators_session(services):
    ui_env, api_env = services["temporal-ui"]["environment"], services["api"]["environment"]
    endpoint = ui_env["TEMPORAL_CODEC_ENDPOINT"]
    assert endpoint.endswith("/codec") and "${" not in endpoint
    assert str(ui_env["TEMPORAL_CODEC_INCLUDE_CREDENTIALS"]).lower() == "true"
    assert "MINT_CODEC_TOKEN" not in ui_env and "MINT_CODEC_TOKEN" in api_env
    # The UI's origin, as the browser sends it, is one the codec server accepts a session from.
    assert "http://localhost:8233" in api_env["MINT_CODEC_ORIGINS"].split(",")


def test_the_api_and_worker_still_share_their_settings(services):
    for name in ("api", "worker"):
        env = services[name]["environment"]
        assert env["TEMPORAL_ADDRESS"] == "temporal:7233" and "MINT_ENCRYPTION_KEY" in env


# What the code reads, to check the file against: the variables Settings reads, the commands `mint` has, and
# what `mint api` / `mint worker` refuse to start without.
def _read_by_settings() -> set[str]:
    from infra.settings import Environment

    return {str(f.validation_alias) for f in Environment.model_fields.values()}


# The services that run Mint (the others run images that read their own variables).
MINT_SERVICES = ("api", "worker")
REQUIRED = {"MINT_DATABASE_URL", "TEMPORAL_ADDRESS", "MINT_ENCRYPTION_KEY"}
# What each service needs besides, and which of those are secrets that must be given (never defaulted).
OWN_SECRETS = {"api": ("MINT_API_KEY", "MINT_CODEC_TOKEN"), "worker": ("MINT_METRICS_TOKEN",)}


def test_every_variable_the_mint_services_set_is_one_settings_reads(services):
    read = _read_by_settings()
    for name in MINT_SERVICES:
        unknown = set(services[name]["environment"]) - read
        assert unknown == set(), f"{name} sets variables Mint does not read: {sorted(unknown)}"


def test_the_required_variables_are_set_and_the_api_key_guards_the_api(services):
    for name in MINT_SERVICES:
        env = services[name]["environment"]
        required = REQUIRED | set(OWN_SECRETS[name])
        assert required <= set(env), f"{name} lacks {sorted(required - set(env))}"
        for secret in ("MINT_ENCRYPTION_KEY", *OWN_SECRETS[name]):
            assert ":?" in env[secret], (
                f"{name}: {secret} must be required (${{VAR:?message}}), not defaulted"
            )
    assert ":?" in services["api"]["environment"]["MINT_API_KEY"]


def test_a_worker_gets_none_of_the_apis_secrets_and_the_api_none_of_the_workers(services):
    """A shared x-mint-env would carry the default developer's API key and the codec token to every
    worker. A worker gets only what it uses: what `mint up` keeps out of its worker, compose keeps out too."""
    from process.worker_process import API_ONLY_VARIABLES

    assert {"MINT_API_KEY", "MINT_CODEC_TOKEN"} <= set(API_ONLY_VARIABLES)
    worker, api = services["worker"]["environment"], services["api"]["environment"]
    assert set(API_ONLY_VARIABLES) & set(worker) == set(), sorted(set(API_ONLY_VARIABLES) & set(worker))
    assert "MINT_METRICS_TOKEN" not in api
    # Nothing shared names an API-only variable under another key (`${MINT_API_KEY}` in some other value).
    for value in worker.values():
        assert not any(f"${{{name}" in str(value) for name in API_ONLY_VARIABLES), value


def test_the_commands_are_mint_commands(services):
    from process.cli import cli

    for name in MINT_SERVICES:
        program, command = services[name]["command"].split()
        assert program == "mint" and command in cli.commands and command == name


def test_published_ports_are_the_authenticated_api_or_loopback(services):
    from infra.settings import Settings

    api = services["api"]
    port = int(api["environment"].get("MINT_API_PORT", Settings().api_port))
    assert api["environment"]["MINT_API_HOST"] == "0.0.0.0"
    assert [str(p).rsplit(":", 1)[-1] for p in api["ports"]] == [str(port)]
    for name, service in services.items():
        if name != "api":
            assert set(_host_ips(service)) <= LOOPBACK, f"{name} is published beyond loopback"
    worker = services["worker"]
    assert "ports" not in worker and worker["environment"]["MINT_METRICS_PORT"]
    # Its metrics port asks for a token (the metrics token: infra/settings/ metrics_port_token).
    assert worker["environment"]["MINT_METRICS_TOKEN"]


def test_stopping_waits_longer_than_mint_does(services):
    """Docker's SIGKILL comes after stop_grace_period: it must not cut short Mint's own bounded stop."""
    from infra.settings import Settings
    from process.cli import _stop_deadline

    for name in MINT_SERVICES:
        service = services[name]
        grace = float(service["environment"]["MINT_SHUTDOWN_GRACE_SECONDS"])
        period = float(service["stop_grace_period"].removesuffix("s"))
        assert period > _stop_deadline(Settings(shutdown_grace_seconds=grace))
        probe = " ".join(service["healthcheck"]["test"])
        assert "/healthz" in probe
