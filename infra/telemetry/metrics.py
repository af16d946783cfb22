"""Mint's Prometheus metrics: one registry per running stack (API, worker or both), with the Temporal SDK's own
metrics beside Mint's.

What is counted where: executions by live status are read from Postgres when scraped, so every API answers
the same; step durations and transitions are recorded by the transition writer, calls (and model tokens) by
the activities' interceptor (activities/observe.py), connection pools and Temporal's task slots when scraped.
docs/operations.md's "Logs and metrics" lists every series.
"""

from __future__ import annotations

import hmac
import logging
import socket
from collections.abc import Awaitable, Callable, Iterable, Iterator

import asyncpg
import httpx
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from contracts.transitions import TERMINAL_STATUSES
from infra.telemetry.temporal_sdk import temporal_runtime

log = logging.getLogger(__name__)
# No `_created` series beside each counter and histogram: a start time per series, which Prometheus does not
# need to compute rates, would double what every scrape carries.
disable_created_metrics()

LIVE_STATUSES = ("queued", "starting", "running", "awaiting_input")
# Seconds. A call is a model or HTTP round trip; a step may be a wait for input of days.
CALL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
STEP_BUCKETS = (0.001, 0.005, 0.025, 0.1, 0.5, 1.0, 5.0, 30.0, 60.0, 300.0, 3600.0, 86400.0)
# Targets (model names, hosts, tools) come from developers' tasks: past this many distinct values of its own
# a developer's label says `other`, so that no tenant can grow the series without bound, nor use up another's
# room. The total is a backstop for very many developers at once.
MAX_LABEL_VALUES = 200
MAX_LABEL_VALUES_TOTAL = 5_000
OTHER = "other"
# Outcomes of calls Mint refused to make (the target was never reached): recorded without a target, since a
# refused target costs nothing to name and would otherwise fill the label's values.
REFUSED_OUTCOMES = frozenset(
    {
        "EgressRefused",
        "BadToolCall",
        "McpRefused",
        "ModelNotConfigured",
        "BudgetExceeded",
        "BudgetUnknown",
        "IntegrationUnavailable",
    }
)
NO_TARGET = ""  # (Prometheus reads an empty label as no label)
INCLUDE_TIMEOUT_SECONDS = 5.0

ExecutionCounter = Callable[[], Awaitable[dict[str, int]]]


class BoundedValues:
    """A label's values, bounded per developer: each developer's first `limit` distinct values as they are,
    later ones as `other`; a value already shown (for anyone) is shown again at no cost. At most `total`
    values in all."""

    def __init__(self, limit: int = MAX_LABEL_VALUES, total: int = MAX_LABEL_VALUES_TOTAL):
        self.limit = limit
        self.total = total
        self.seen: set[str] = set()
        self.by_developer: dict[str, set[str]] = {}

    def __call__(self, value: str, developer: str = "") -> str:
        if value in self.seen:
            return value
        mine = self.by_developer.setdefault(developer, set())
        if len(mine) >= self.limit or len(self.seen) >= self.total:
            return OTHER
        mine.add(value)
        self.seen.add(value)
        return value


class Metrics:
    """The instruments the stack's parts record to, and what `/metrics` answers."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        r = self.registry
        self.executions = Gauge(
            "mint_executions", "Executions in each live status, read from Postgres.", ["status"], registry=r
        )
        self.executions_ended = Counter(
            "mint_executions_ended", "Executions this worker ended, by final status.", ["status"], registry=r
        )
        self.transitions = Counter("mint_transitions", "Transitions written, by type.", ["type"], registry=r)
        self.step_seconds = Histogram(
            "mint_step_duration_seconds",
            "Time from a step's previous transition to its own, by the kind the transition shows.",
            ["kind"],
            buckets=STEP_BUCKETS,
            registry=r,
        )
        self.calls = Counter(
            "mint_calls",
            "Calls steps made, by kind, target and outcome (`ok`, or the error's type).",
            ["kind", "target", "outcome"],
            registry=r,
        )
        self.call_seconds = Histogram(
            "mint_call_duration_seconds",
            "How long calls took.",
            ["kind", "target"],
            buckets=CALL_BUCKETS,
            registry=r,
        )
        self.model_tokens = Counter(
            "mint_model_tokens",
            "Model tokens used, by model and direction.",
            ["model", "direction"],
            registry=r,
        )
        self.pools: dict[str, asyncpg.Pool] = {}
        r.register(PoolMetrics(self.pools))
        r.register(temporal_runtime()[1])
        self.count_executions: ExecutionCounter | None = None  # set where an API runs
        self.included: tuple[tuple[str, str], ...] = ()  # (process, URL): other processes' metrics to add
        self.include_token: str | None = None  # the operator's token, which their metrics ports may ask for
        self.target = BoundedValues()

    def watch_pool(self, name: str, pool: asyncpg.Pool) -> None:
        self.pools[name] = pool

    def record_call(self, kind: str, target: str, seconds: float, outcome: str, developer: str = "") -> None:
        """One call of `developer`'s (whose label budget its target counts against): a refused call (one of
        REFUSED_OUTCOMES) has no target."""
        target = NO_TARGET if outcome in REFUSED_OUTCOMES else self.target(target, developer)
        self.calls.labels(kind, target, outcome).inc()
        self.call_seconds.labels(kind, target).observe(seconds)

    def record_tokens(self, model: str, prompt: int, completion: int, developer: str = "") -> None:
        model = self.target(model, developer)
        self.model_tokens.labels(model, "prompt").inc(prompt)
        self.model_tokens.labels(model, "completion").inc(completion)

    def record_transitions(
        self, types: Iterable[str], status: str, steps: Iterable[tuple[str, float]]
    ) -> None:
        """A written batch: its transitions' types, the execution's status after it, each step's duration."""
        for kind in types:
            self.transitions.labels(kind).inc()
        if status in TERMINAL_STATUSES:
            self.executions_ended.labels(status).inc()
        for kind, seconds in steps:
            self.step_seconds.labels(kind).observe(seconds)

    async def render(self) -> bytes:
        """The Prometheus text format: this process's metrics and those of the processes it includes."""
        if self.count_executions is not None:
            counts = await self.count_executions()
            for status in LIVE_STATUSES:
                self.executions.labels(status).set(counts.get(status, 0))
        families = list(self.registry.collect())
        if self.included:
            token = {"Authorization": f"Bearer {self.include_token}"} if self.include_token else {}
            async with httpx.AsyncClient(trust_env=False, headers=token) as http:
                for process, url in self.included:
                    families = _merged(families, await _fetch(http, process, url), process)
        return generate_latest(_Families(families))


def free_loopback_port() -> int:
    """A loopback port free now: where `mint up` has its worker serve the metrics its API's /metrics adds."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def metrics_app(metrics: Metrics, token: str | None = None) -> Starlette:
    """MINT_METRICS_PORT's app: `GET /metrics`, and `GET /healthz` for probes (it says only that the process
    serves). With a token (MINT_METRICS_TOKEN, else MINT_CODEC_TOKEN) set, /metrics asks for it as a bearer
    token, as the API's /metrics does; without one it is open, so bind it where only Prometheus reaches (the default host
    is loopback)."""

    async def scrape(request: Request) -> Response:
        if token is not None and not _bearer_is(request, token):
            return Response(
                "metrics are for the operator: send `Authorization: Bearer <MINT_METRICS_TOKEN>`\n",
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        return Response(await metrics.render(), media_type=CONTENT_TYPE_LATEST)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    return Starlette(
        routes=[Route("/metrics", scrape, methods=["GET"]), Route("/healthz", healthz, methods=["GET"])]
    )


def _bearer_is(request: Request, token: str) -> bool:
    header = request.headers.get("authorization", "")
    given = header[7:].strip() if header.lower().startswith("bearer ") else ""
    return hmac.compare_digest(given.encode(), token.encode())


class PoolMetrics(Collector):
    """Each Postgres pool's connections in use and its size, read when scraped: in use near the maximum means
    requests or activities wait for a connection (MINT_API_DB_POOL_SIZE, MINT_WORKER_DB_POOL_SIZE)."""

    def __init__(self, pools: dict[str, asyncpg.Pool]):
        self.pools = pools

    def collect(self) -> Iterator[Metric]:
        used = Metric("mint_db_pool_connections_in_use", "Connections handed out, by pool.", "gauge")
        most = Metric("mint_db_pool_max_connections", "The most connections a pool opens.", "gauge")
        for name, pool in self.pools.items():
            used.add_sample(used.name, {"pool": name}, pool.get_size() - pool.get_idle_size())
            most.add_sample(most.name, {"pool": name}, pool.get_max_size())
        yield used
        yield most


class _Families:
    """Collected families, in the shape generate_latest reads."""

    def __init__(self, families: list[Metric]):
        self.families = families

    def collect(self) -> list[Metric]:
        return self.families


async def _fetch(http: httpx.AsyncClient, process: str, url: str) -> list[Metric]:
    try:
        response = await http.get(url, timeout=INCLUDE_TIMEOUT_SECONDS)
        response.raise_for_status()
    except httpx.HTTPError as exc:
        log.warning("could not read the %s's metrics at %s: %s", process, url, exc)
        return []
    return list(text_string_to_metric_families(response.text))


def _merged(families: list[Metric], others: list[Metric], process: str) -> list[Metric]:
    """`families` with `others`' samples added, each labelled with the process it comes from (two processes
    report some of the same series: the Temporal client's requests, the pools)."""
    by_name = {f.name: f for f in families}
    for other in others:
        samples = [s._replace(labels={**s.labels, "process": process}) for s in other.samples]
        mine = by_name.get(other.name)
        if mine is None:
            other.samples = samples
            by_name[other.name] = other
            families.append(other)
        elif mine.type == other.type:
            mine.samples.extend(samples)
    return families
