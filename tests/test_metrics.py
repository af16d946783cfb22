"""Prometheus metrics: an execution's calls, steps and end move the counters an operator scrapes at GET /metrics
(and on MINT_METRICS_PORT), beside the Temporal SDK's own; no developer's API key opens them."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest_asyncio
from prometheus_client.parser import text_string_to_metric_families
from temporalio.common import Priority
from temporalio.testing import ActivityEnvironment
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput

from activities.observe import ActivityObserver
from contracts.calls import CallAnswer, McpCallRequest, WorkerCall
from contracts.temporal import CALL_API, CALL_MCP
from infra.telemetry.metrics import MAX_LABEL_VALUES, Metrics
from infra.temporal import errors
from tests.conftest import temporal_address
from tests.helpers import create_agent, create_task, run_task, start, wait_for_status
from tests.local_http import Answer, LocalServer, Request
from tests.stack import BackgroundStack, free_port

TOKEN = "metrics-operator-token-0123456789abcdef"
OPERATOR = {"Authorization": f"Bearer {TOKEN}"}


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def metrics_stack(postgres_url, temporal_env) -> AsyncIterator[BackgroundStack]:
    """A stack of its own: its own task queue, so that every execution here runs on its worker and counts in
    its registry (the session's `stack` has no operator token, and its worker polls another queue)."""
    async with BackgroundStack(
        postgres_url,
        temporal_address(temporal_env),
        task_queue="metrics",
        codec_token=TOKEN,
        metrics_port=free_port(),
    ) as stack:
        yield stack


@pytest_asyncio.fixture(loop_scope="session")
async def tenant(metrics_stack, api_key) -> AsyncIterator[httpx.AsyncClient]:
    headers = {"Authorization": f"Bearer {api_key}"}
    async with httpx.AsyncClient(base_url=metrics_stack.url, headers=headers, timeout=30) as client:
        yield client


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def scrape(url: str, headers: dict[str, str] | None = None) -> tuple[Samples, dict[str, str]]:
    """Every sample of the text format, by (name, labels), and each family's type by its name."""
    async with httpx.AsyncClient(timeout=30) as client:
        response = await client.get(url, headers=headers or {})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    samples, types = {}, {}
    for family in text_string_to_metric_families(response.text):
        types[family.name] = family.type
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples, types


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sum of `name`'s samples whose labels include `labels` (0 when there are none)."""
    wanted = set(labels.items())
    return sum(v for (n, found), v in samples.items() if n == name and wanted <= found)


def fails_on_broken(request: Request) -> Answer:
    return (500, {}, b"down") if request.path == "/broken" else (200, {}, b'{"ok": true}')


async def test_an_execution_moves_the_counters_and_histograms(metrics_stack, tenant):
    server = LocalServer(fails_on_broken)
    tools = [
        {"name": "fine", "type": "api_call", "api_call": {"method": "GET", "url": f"{server.url}fine"}},
        {"name": "broken", "type": "api_call", "api_call": {"method": "GET", "url": f"{server.url}broken"}},
    ]
    task = {
        "name": "metered",
        "tools": tools,
        "main": [
            {"tool": "fine", "arguments": {}},
            {"tool": "broken", "arguments": {}, "retry": {"max_attempts": 2, "initial_interval": 0.05}},
        ],
    }
    url = f"{metrics_stack.url}/metrics"
    before, _ = await scrape(url, OPERATOR)
    try:
        execution, _ = await run_task(tenant, task)
    finally:
        server.close()
    assert execution["status"] == "failed" and "answered 500" in execution["error"], execution
    after, types = await scrape(url, OPERATOR)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    call = {"kind": "api_call", "target": "127.0.0.1"}
    assert moved("mint_calls_total", **call, outcome="ok") == 1
    assert moved("mint_calls_total", **call, outcome="HttpUnavailable") == 2  # both attempts
    assert moved("mint_call_duration_seconds_count", **call) == 3
    assert moved("mint_call_duration_seconds_bucket", **call, le="+Inf") == 3
    assert moved("mint_step_duration_seconds_count", kind="tool_call") == 1  # the call that answered
    assert moved("mint_transitions_total", type="error") == 1
    assert moved("mint_executions_ended_total", status="failed") == 1
    assert types["mint_call_duration_seconds"] == "histogram" and types["mint_calls"] == "counter"
    # Saturation: each pool's connections against its size, and the worker's task slots (the SDK's own).
    assert value(after, "mint_db_pool_max_connections", pool="api") == metrics_stack.settings.api_db_pool_size
    assert (
        value(after, "mint_db_pool_max_connections", pool="worker")
        == metrics_stack.settings.worker_db_pool_size
    )
    assert value(after, "temporal_worker_task_slots_available", task_queue="metrics") > 0
    assert any(t == "histogram" for name, t in types.items() if name.startswith("temporal_"))


async def test_a_refused_call_has_no_target(metrics_stack, tenant):
    """A target Mint refused to call was never reached: naming it would let any task fill the label's values."""
    url = "http://10.213.7.9/refused"
    task = {
        "name": "refused",
        "tools": [{"name": "private", "type": "api_call", "api_call": {"method": "GET", "url": url}}],
        "main": [{"tool": "private", "arguments": {}}],
    }
    before, _ = await scrape(f"{metrics_stack.url}/metrics", OPERATOR)
    execution, _ = await run_task(tenant, task)
    assert execution["status"] == "failed" and "not a public address" in execution["error"], execution
    after, _ = await scrape(f"{metrics_stack.url}/metrics", OPERATOR)
    refused = {"kind": "api_call", "outcome": "EgressRefused", "target": ""}
    assert value(after, "mint_calls_total", **refused) - value(before, "mint_calls_total", **refused) == 1
    assert not [labels for (_, labels) in after if ("target", "10.213.7.9") in labels]


class Answering(ActivityInboundInterceptor):
    """The activity behind the worker's interceptor: answers, or refuses as the egress check does."""

    def __init__(self) -> None:
        self.refuse = False

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        if self.refuse:
            raise errors.permanent("not a public address", "EgressRefused")
        return CallAnswer(response={}, attempt=1)


async def _observed(metrics: Metrics, answering: Answering, request: Any, **info: Any) -> None:
    """`request` run through the worker's interceptor, in an activity whose info has `info`'s fields."""
    environment = ActivityEnvironment()
    environment.info = dataclasses.replace(environment.info, **info)
    observed = ActivityObserver(metrics).intercept_activity(answering)

    async def run() -> None:
        try:
            await observed.execute_activity(ExecuteActivityInput(lambda: None, [request], None, {}))
        except Exception:
            if not answering.refuse:
                raise

    await environment.run(run)


def _in_worker(developer: str, url: str) -> WorkerCall:
    request = {"method": "GET", "url": url}
    return WorkerCall(CALL_API, request, "execution-1", developer, "call-1")


async def _targets(metrics: Metrics) -> dict[str, set[str]]:
    samples: dict[str, set[str]] = {}
    for family in text_string_to_metric_families((await metrics.render()).decode()):
        for sample in family.samples:
            if sample.name == "mint_calls_total":
                samples.setdefault(sample.labels["outcome"], set()).add(sample.labels["target"])
    return samples


async def test_one_developer_filling_its_label_budget_leaves_anothers_targets_alone():
    """With one budget for all, 205 distinct targets of one developer's would turn every later target,
    anyone's, into `other`. Each developer has a budget of its own; refused calls spend none of it."""
    metrics, answering = Metrics(), Answering()
    for i in range(MAX_LABEL_VALUES + 5):
        await _observed(metrics, answering, _in_worker("dev-a", f"http://a{i}.example/"))
    answering.refuse = True
    for i in range(MAX_LABEL_VALUES + 5):
        await _observed(metrics, answering, _in_worker("dev-b", f"http://refused{i}.example/"))
    answering.refuse = False
    await _observed(metrics, answering, _in_worker("dev-a", "http://a-late.example/"))
    await _observed(metrics, answering, _in_worker("dev-b", "http://b.example/"))
    # A queued call (not in the worker) names its developer in its secrets' scope, or not at all: then the
    # workflow's fairness key (the developer, since every start carries it) is whose it is.
    queued = {"method": "GET", "url": "http://c.example/", "secrets": {"developer_id": "dev-c"}}
    await _observed(metrics, answering, queued, activity_type=CALL_API)
    mcp = McpCallRequest({"provider": "mcp"}, "d_tool", {})
    await _observed(metrics, answering, mcp, activity_type=CALL_MCP, priority=Priority(fairness_key="dev-d"))
    targets = await _targets(metrics)
    assert {"b.example", "c.example", "d_tool", "a0.example", f"a{MAX_LABEL_VALUES - 1}.example"} <= targets[
        "ok"
    ]
    assert "other" in targets["ok"] and "a-late.example" not in targets["ok"]  # dev-a's own budget is spent
    assert targets["EgressRefused"] == {""}


async def test_executions_by_live_status_are_read_from_postgres(metrics_stack, tenant):
    agent = await create_agent(tenant)
    task = await create_task(
        tenant, agent["id"], {"name": "asks", "main": [{"wait_for_input": {"info": "?"}}]}
    )
    url = f"{metrics_stack.url}/metrics"
    before, _ = await scrape(url, OPERATOR)
    execution = await start(tenant, task["id"])
    await wait_for_status(tenant, execution["id"], {"awaiting_input"})
    waiting, _ = await scrape(url, OPERATOR)
    assert value(waiting, "mint_executions", status="awaiting_input") == (
        value(before, "mint_executions", status="awaiting_input") + 1
    )
    cancelled = await tenant.put(
        f"/executions/{execution['id']}", json={"status": "cancelled", "reason": "done"}
    )
    assert cancelled.status_code == 200, cancelled.text
    await wait_for_status(tenant, execution["id"], {"cancelled"})
    after, _ = await scrape(url, OPERATOR)
    assert value(after, "mint_executions", status="awaiting_input") == value(
        before, "mint_executions", status="awaiting_input"
    )


async def test_a_developer_key_does_not_open_the_metrics(metrics_stack, tenant):
    refused = await tenant.get("/metrics")
    assert refused.status_code == 401, refused.text
    assert "mint_" not in refused.text and "operator" in refused.json()["error"]["message"]
    async with httpx.AsyncClient(base_url=metrics_stack.url) as anonymous:
        assert (await anonymous.get("/metrics")).status_code == 401
        wrong = await anonymous.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}x"})
        assert wrong.status_code == 401


async def test_the_metrics_port_asks_for_the_operators_token_when_there_is_one(metrics_stack):
    port = metrics_stack.settings.metrics_port
    samples, types = await scrape(f"http://127.0.0.1:{port}/metrics", {"Authorization": f"Bearer {TOKEN}"})
    assert (
        types["mint_executions"] == "gauge" and value(samples, "mint_db_pool_max_connections", pool="api") > 0
    )
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as anonymous:
        refused = await anonymous.get("/metrics")
        assert refused.status_code == 401 and "mint_" not in refused.text
        assert (
            await anonymous.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}x"})
        ).status_code == 401
        # Its health route (a probe's, for `mint worker`, which has no other port) needs no token.
        assert (await anonymous.get("/healthz")).json() == {"status": "ok"}


async def test_without_an_operator_token_there_are_no_metrics(api):
    assert (await api.get("/metrics")).status_code == 404


def test_the_temporal_sdks_buffered_metrics_become_prometheus_families():
    """Through a runtime of its own (whose meter names metrics as given: the SDK prefixes its own with
    `temporal_`): what it records is summed up as the text format has it."""
    from temporalio.runtime import MetricBuffer, MetricBufferDurationFormat, Runtime, TelemetryConfig

    from infra.telemetry.temporal_sdk import TemporalSdkMetrics

    buffer = MetricBuffer(1000, MetricBufferDurationFormat.SECONDS)
    meter = Runtime(telemetry=TelemetryConfig(metrics=buffer)).metric_meter
    collector = TemporalSdkMetrics(buffer)
    counter = meter.create_counter("polls_total", "Polls.")
    counter.add(2, {"worker-type": "activity"})
    counter.add(3, {"worker-type": "activity"})
    latency = meter.create_histogram_float("wait", "Waits.", "s")
    latency.record(0.003)
    latency.record(2.0)
    slots = meter.create_gauge("slots", "Slots.")
    slots.set(7)
    slots.set(5)
    families = {f.name: f for f in collector.collect()}
    assert [(s.name, s.labels, s.value) for s in families["polls"].samples] == [
        ("polls_total", {"service_name": "temporal-core-sdk", "worker_type": "activity"}, 5)
    ]
    buckets = {s.labels["le"]: s.value for s in families["wait"].samples if s.name.endswith("_bucket")}
    assert (buckets["0.005"], buckets["1.0"], buckets["2.5"], buckets["+Inf"]) == (1, 1, 2, 2)
    sums = {s.name: s.value for s in families["wait"].samples if not s.name.endswith("_bucket")}
    assert sums == {"wait_count": 2, "wait_sum": 2.003}
    assert [s.value for s in families["slots"].samples] == [5]
