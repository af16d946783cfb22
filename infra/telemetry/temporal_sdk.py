"""The Temporal SDK's runtime for this process: its metrics (task slots, poll and schedule-to-start latencies,
requests to the server) kept in a buffer that Mint's /metrics reads, and its core's logs sent through Python
logging, so that they take MINT_LOG_FORMAT like every other line.

One runtime per process, made on first use: the SDK gives each runtime a thread pool of its own, and a
client (with the workers it runs) stays on the runtime it connected with.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from temporalio.runtime import (
    BUFFERED_METRIC_KIND_COUNTER,
    BUFFERED_METRIC_KIND_GAUGE,
    LogForwardingConfig,
    LoggingConfig,
    MetricBuffer,
    MetricBufferDurationFormat,
    Runtime,
    TelemetryConfig,
    TelemetryFilter,
)

from infra.telemetry.logs import CORE_LOGGER

# Updates the SDK may hold between two drains (each activity or workflow task makes a few dozen); past it, it
# drops updates. A thread drains it this often, whether or not anyone scrapes.
BUFFER_SIZE = 200_000
DRAIN_SECONDS = 2.0
# Seconds: the SDK's histograms are latencies (durations come as seconds, see MetricBufferDurationFormat).
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
_NOT_A_LABEL_CHARACTER = re.compile(r"[^a-zA-Z0-9_]")

Labels = tuple[tuple[str, str], ...]


@dataclass
class _Histogram:
    buckets: list[int] = field(default_factory=lambda: [0] * len(BUCKETS))
    count: int = 0
    total: float = 0.0

    def record(self, value: float) -> None:
        self.count += 1
        self.total += value
        for i, bound in enumerate(BUCKETS):
            if value <= bound:
                self.buckets[i] += 1


@dataclass
class _Family:
    kind: int
    description: str
    values: dict[Labels, float] = field(default_factory=dict)  # counters (running totals) and gauges
    histograms: dict[Labels, _Histogram] = field(default_factory=dict)


class TemporalSdkMetrics(Collector):
    """The SDK's metric updates, drained from its buffer and summed up, as Prometheus families."""

    def __init__(self, buffer: MetricBuffer):
        self.buffer = buffer
        self.families: dict[str, _Family] = {}
        self.lock = threading.Lock()

    def drain(self) -> None:
        with self.lock:
            for update in self.buffer.retrieve_updates():
                metric = update.metric
                family = self.families.get(metric.name)
                if family is None:
                    family = self.families[metric.name] = _Family(metric.kind, metric.description or "")
                labels = tuple(
                    sorted((_NOT_A_LABEL_CHARACTER.sub("_", k), str(v)) for k, v in update.attributes.items())
                )
                if family.kind == BUFFERED_METRIC_KIND_COUNTER:
                    family.values[labels] = family.values.get(labels, 0.0) + update.value  # a delta
                elif family.kind == BUFFERED_METRIC_KIND_GAUGE:
                    family.values[labels] = float(update.value)
                else:
                    family.histograms.setdefault(labels, _Histogram()).record(float(update.value))

    def collect(self) -> Iterator[Metric]:
        self.drain()
        with self.lock:
            for name, family in sorted(self.families.items()):
                yield _as_prometheus(name, family)


def _as_prometheus(name: str, family: _Family) -> Metric:
    if family.kind == BUFFERED_METRIC_KIND_COUNTER:
        name = name.removesuffix("_total")  # (`local_activity_total`): the format adds it to every counter
        metric = Metric(name, family.description, "counter")
        for labels, value in family.values.items():
            metric.add_sample(f"{name}_total", dict(labels), value)
    elif family.kind == BUFFERED_METRIC_KIND_GAUGE:
        metric = Metric(name, family.description, "gauge")
        for labels, value in family.values.items():
            metric.add_sample(name, dict(labels), value)
    else:
        metric = Metric(name, family.description, "histogram")
        for labels, histogram in family.histograms.items():
            # record() counts a value in every bucket it fits, so the counts are already cumulative.
            for bound, count in zip(BUCKETS, histogram.buckets, strict=True):
                metric.add_sample(f"{name}_bucket", {**dict(labels), "le": str(bound)}, count)
            metric.add_sample(f"{name}_bucket", {**dict(labels), "le": "+Inf"}, histogram.count)
            metric.add_sample(f"{name}_count", dict(labels), histogram.count)
            metric.add_sample(f"{name}_sum", dict(labels), histogram.total)
    return metric


_runtime: Runtime | None = None
_metrics: TemporalSdkMetrics | None = None
_made = threading.Lock()


def temporal_runtime() -> tuple[Runtime, TemporalSdkMetrics]:
    """This process's runtime (for Client.connect) and the collector of its metrics."""
    global _runtime, _metrics
    with _made:
        if _runtime is None or _metrics is None:
            buffer = MetricBuffer(BUFFER_SIZE, MetricBufferDurationFormat.SECONDS)
            forwarding = LogForwardingConfig(
                logger=logging.getLogger(CORE_LOGGER), append_target_to_name=False
            )
            logs = LoggingConfig(
                TelemetryFilter(core_level="WARN", other_level="ERROR"), forwarding=forwarding
            )
            _runtime = Runtime(telemetry=TelemetryConfig(logging=logs, metrics=buffer))
            _metrics = TemporalSdkMetrics(buffer)
            threading.Thread(
                target=_drain_forever, args=(_metrics,), name="temporal-metrics", daemon=True
            ).start()
        return _runtime, _metrics


def _drain_forever(metrics: TemporalSdkMetrics) -> None:
    stop = threading.Event()
    while not stop.wait(DRAIN_SECONDS):
        try:
            metrics.drain()
        except Exception:  # never let the drain die: the buffer would fill and the SDK drop updates
            logging.getLogger(__name__).exception("could not read the Temporal SDK's metrics")
