"""deploy/k8s/, read as data (no cluster runs the tests): each manifest parses, the probes ask Mint's own health
routes, every variable set is one Mint reads, and a worker is given longer to stop than Mint takes to drain."""

from __future__ import annotations

import secrets
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from starlette.routing import Route

from infra.settings import Environment, Settings
from infra.telemetry.metrics import Metrics, metrics_app
from process.cli import _stop_deadline, cli

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
    from api.app import create_app
    from infra.store.tables import Store
    from services.clients import Clients

    clients = Clients(Store(None), *([None] * 6))  # type: ignore[arg-type]
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
    assert {"MINT_DATABASE_URL", "TEMPORAL_ADDRESS", "MINT_ENCRYPTION_KEY"} <= set(env)
    own = {"mint-api": {"MINT_API_KEY", "MINT_CODEC_TOKEN"}, "mint-worker": {"MINT_METRICS_TOKEN"}}[name]
    assert own <= set(env), f"{name} lacks {sorted(own - set(env))}"


def test_a_worker_gets_none_of_the_apis_secrets(manifests):
    """One Secret every Deployment took with envFrom would give each worker the default developer's
    API key and the codec token. A worker gets only what it uses, as under `mint up` (API_ONLY_VARIABLES)."""
    from process.worker_process import API_ONLY_VARIABLES

    worker = _env(_container(manifests[("Deployment", "mint-worker")]), manifests)
    api = _env(_container(manifests[("Deployment", "mint-api")]), manifests)
    assert set(API_ONLY_VARIABLES) & set(worker) == set(), sorted(set(API_ONLY_VARIABLES) & set(worker))
    assert "MINT_METRICS_TOKEN" not in api
    assert {"MINT_API_KEY", "MINT_CODEC_TOKEN"} <= set(api)


@pytest.mark.parametrize("name", ["mint-api", "mint-worker"])
def test_the_example_secrets_do_not_start_mint(manifests, monkeypatch, name):
    """secret.example.yaml's CHANGE-ME values passed every check (they are long enough) and started a cluster
    whose keys anyone can read here: each Deployment's variables, as the example gives them, are refused in
    one line naming a variable; with each placeholder replaced by a secret of its own, they start."""
    env = _env(_container(manifests[("Deployment", name)]), manifests)
    for variable, value in env.items():
        monkeypatch.setenv(variable, value)
    with pytest.raises(ValueError, match=r"^[A-Z_]+ still holds an example's CHANGE-ME placeholder"):
        Settings.from_env()
    for number, (variable, value) in enumerate(env.items()):
        if "CHANGE-ME" in value:
            monkeypatch.setenv(variable, value.replace("CHANGE-ME", f"s{number}-{secrets.token_urlsafe(32)}"))
    Settings.from_env()


def test_the_example_secrets_are_not_one_value_for_two_jobs(manifests):
    """One placeholder for both the encryption key and the codec token taught copying one value into both."""
    values = [
        value
        for (kind, _), doc in manifests.items()
        if kind == "Secret"
        for key, value in doc["stringData"].items()
        if key in ("MINT_API_KEY", "MINT_ENCRYPTION_KEY", "MINT_CODEC_TOKEN", "MINT_METRICS_TOKEN")
    ]
    assert len(values) == 4 and len(set(values)) == 4, values


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
    # Its metrics ask for a token (Settings.metrics_port_token): its own, never the operator's codec token.
    assert env["MINT_METRICS_TOKEN"] and "MINT_CODEC_TOKEN" not in env


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


# The image (Dockerfile), read as data: no Docker engine builds it in the tests.
DOCKERFILE = K8S.parent.parent / "Dockerfile"


def _instructions() -> list[tuple[str, str]]:
    """The Dockerfile's (INSTRUCTION, arguments), continued lines joined, comments dropped."""
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]


def test_the_images_processes_run_as_a_user_that_is_not_root():
    """The image's processes do not run as root: the last USER (which CMD and every `command` run as) is
    a user the image creates, numeric so that Kubernetes' runAsNonRoot can check it, and the manifests do."""
    steps = _instructions()
    users = [i for i, (op, _) in enumerate(steps) if op == "USER"]
    assert users, "the Dockerfile sets no USER: its processes run as root"
    user = steps[users[-1]][1].split(":")[0]
    assert user not in ("root", "0") and user.isdigit(), user
    created = [args for op, args in steps[: users[-1]] if op == "RUN" and "useradd" in args]
    assert any(f"--uid {user}" in args for args in created), created
    assert all(op != "RUN" for op, _ in steps[users[-1] :]), "nothing runs as root after USER"


def test_the_image_copies_the_packages_and_nothing_else():
    """Every package pyproject.toml builds is copied; the whole working tree is not (a local `.mint` data dir
    holds keys)."""
    copied = {args.split()[0].rstrip("/") for op, args in _instructions() if op == "COPY"}
    assert "." not in copied
    project = tomllib.loads((K8S.parent.parent / "pyproject.toml").read_text())["tool"]["setuptools"]
    packages = {name.rstrip("*") for name in project["packages"]["find"]["include"]}
    assert packages <= copied, sorted(packages - copied)
    copy_lines = " ".join(args for op, args in _instructions() if op == "COPY")
    assert all(f"{module}.py" in copy_lines for module in project.get("py-modules", []))


@pytest.mark.parametrize("name", ["mint-api", "mint-worker"])
def test_kubernetes_checks_the_container_is_not_root(manifests, name):
    context = _container(manifests[("Deployment", name)])["securityContext"]
    assert context["runAsNonRoot"] is True and context["allowPrivilegeEscalation"] is False
