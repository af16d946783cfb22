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
