"""deploy/k8s/, read as data (no cluster runs the tests): each manifest parses, the probes ask Mint's own health
routes, every variable set is one Mint reads, and a worker is given longer to stop than Mint takes to drain."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from starlette.routing import Route

from mint.process.cli import _stop_deadline, cli
from mint.settings import Environment, Settings
from mint.telemetry.metrics import Metrics, metrics_app

K8S = Path(__file__).parent.parent / "deploy" / "k8s"
READ_BY_SETTINGS = {str(f.validation_alias) for f in Environment.model_fields.values()}


@pytest.fixture(scope="module")
def manifests() -> dict[tuple[str, str], dict[str, Any]]:
    """Every object in deploy/k8s, by (kind, name)."""
    found = {}
    for path in sorted(K8S.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            found[(doc["kind"], doc["metadata"]["name"])] = doc
    return found


def _container(deployment: dict[str, Any]) -> dict[str, Any]:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return container


def _env(container: dict[str, Any], manifests: dict) -> dict[str, str]:
    """The container's variables: its own and those of the ConfigMaps and Secrets it takes them from."""
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            env.update(manifests[("ConfigMap", source["configMapRef"]["name"])]["data"])
        if "secretRef" in source:
            env.update(manifests[("Secret", source["secretRef"]["name"])]["stringData"])
    env.update({item["name"]: item["value"] for item in container.get("env", [])})
    return env


def _api_routes() -> set[str]:
    """The API's GET routes, from the app itself (its clients are never called here)."""
    from api.app import AppClients, create_app
    from mint.store.tables import Store

    clients = AppClients(Store(None), *([None] * 6))  # type: ignore[arg-type]
    return {r.path for r in create_app(clients, Settings()).routes if "GET" in getattr(r, "methods", ())}


def _port_number(container: dict[str, Any], port: str | int) -> int:
    if isinstance(port, int):
        return port
    return next(p["containerPort"] for p in container["ports"] if p["name"] == port)


def test_the_manifests_are_an_api_and_a_worker_deployment_and_a_service(manifests):
    assert {("Deployment", "mint-api"), ("Deployment", "mint-worker"), ("Service", "mint-api")} <= set(
        manifests
    )
    service = manifests[("Service", "mint-api")]
    api = manifests[("Deployment", "mint-api")]
    assert service["spec"]["selector"] == api["spec"]["selector"]["matchLabels"]
    assert {p["targetPort"] for p in service["spec"]["ports"]} <= {
        p["name"] for p in _container(api)["ports"]
    }
    # No Service for workers: their only port is metrics (for Prometheus).
    assert not any(
        doc["kind"] == "Service" and doc["spec"]["selector"].get("component") == "worker"
        for doc in manifests.values()
    )


@pytest.mark.parametrize("name", ["mint-api", "mint-worker"])
def test_commands_and_variables_are_mints(manifests, name):
    container = _container(manifests[("Deployment", name)])
    program, command = container["command"]
    assert program == "mint" and command in cli.commands and f"mint-{command}" == name
    env = _env(container, manifests)
    assert set(env) - READ_BY_SETTINGS == set(), f"not read by Mint: {sorted(set(env) - READ_BY_SETTINGS)}"
    assert {"MINT_DATABASE_URL", "TEMPORAL_ADDRESS", "MINT_ENCRYPTION_KEY", "MINT_CODEC_TOKEN"} <= set(env)


def test_the_api_probes_ask_its_health_route_on_its_port(manifests):
    container = _container(manifests[("Deployment", "mint-api")])
    env = _env(container, manifests)
    assert env["MINT_API_HOST"] == "0.0.0.0" and "MINT_API_KEY" in env
    routes = _api_routes()
    for probe in ("readinessProbe", "livenessProbe"):
        get = container[probe]["httpGet"]
        assert get["path"] in routes and get["path"] == "/healthz"
        assert _port_number(container, get["port"]) == int(env["MINT_API_PORT"])


def test_the_worker_probes_ask_its_metrics_ports_health_route(manifests):
    container = _container(manifests[("Deployment", "mint-worker")])
    env = _env(container, manifests)
    routes = {r.path for r in metrics_app(Metrics()).routes if isinstance(r, Route)}
    for probe in ("readinessProbe", "livenessProbe"):
        get = container[probe]["httpGet"]
        assert get["path"] in routes
        assert _port_number(container, get["port"]) == int(env["MINT_METRICS_PORT"])
    # Its metrics need the operator's token (mint/telemetry/metrics.py), which it is given.
    assert env["MINT_CODEC_TOKEN"]


@pytest.mark.parametrize("name", ["mint-api", "mint-worker"])
def test_kubernetes_waits_longer_than_mint_takes_to_drain(manifests, name):
    deployment = manifests[("Deployment", name)]
    container = _container(deployment)
    grace = float(_env(container, manifests)["MINT_SHUTDOWN_GRACE_SECONDS"])
    pause = 0.0
    pre_stop = container.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
    if pre_stop[:1] == ["sleep"]:
        pause = float(pre_stop[1])
    period = deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert period > pause + _stop_deadline(Settings(shutdown_grace_seconds=grace))
