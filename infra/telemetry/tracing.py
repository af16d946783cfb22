"""OTLP export (`OTEL_EXPORTER_OTLP_ENDPOINT`): an execution's runs, steps and calls as spans, in the same
trace as the Temporal SDK's own spans for it, so Jaeger or any collector shows an execution as one trace.

How the two join: the trace id is the execution id's (infra/telemetry/traces.py) and its root span's id is
derived from it too (`root_span_id`), so nothing is stored to link them. The API starts the workflow inside
that root span's context (`execution_context`), so the TracingInterceptor (on the Temporal client, which the
worker shares) puts StartWorkflow, RunWorkflow, StartActivity and RunActivity under it; child workflows
(fan-out chunks) inherit it through Temporal's headers. The interceptor makes its workflow spans replay-safely;
workflow code creates none.

Mint's own spans are not made in workflow code either: when the transition writer records an execution's end
it rebuilds the trace from the transitions (the same items `GET /executions/{id}/trace` shows) and exports one
span per run, step and call, with the times the transitions hold. So an execution's own spans appear when it
ends (OTLP spans cannot be amended, and a run's span ends only with it), and replay or a retried write changes
nothing (span ids are derived from the trace, so a repeat is the same spans).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import NonRecordingSpan, SpanContext, Status, StatusCode, TraceFlags
from opentelemetry.util.types import AttributeValue
from temporalio.contrib.opentelemetry import TracingInterceptor

from contracts.json import JsonObject, JsonValue

SCOPE = InstrumentationScope("mint")
# What pairs a span's end item with its start: a step's (workflow, step, item), or the kind of call.
SpanKey = tuple[JsonValue, ...] | str
# Spans leave in batches this often (the SDK's default is 5 s).
EXPORT_DELAY_MS = 1000


def root_span_id(execution_id: str) -> int:
    """The execution's root span id, derived from its id (8 bytes, never 0)."""
    return _span_id(f"{execution_id}:execution")


def _span_id(key: str) -> int:
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") or 1


def _context(execution_id: str, span_id: int) -> SpanContext:
    return SpanContext(
        trace_id=uuid.UUID(execution_id).int,
        span_id=span_id,
        is_remote=False,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )


@contextlib.contextmanager
def execution_context(execution_id: str) -> Iterator[None]:
    """Spans started in the block (the interceptor's StartWorkflow) belong to the execution's trace, under its
    root span. Without tracing configured nothing records them, and this costs next to nothing."""
    parent = NonRecordingSpan(_context(execution_id, root_span_id(execution_id)))
    token = otel_context.attach(trace.set_span_in_context(parent))
    try:
        yield
    finally:
        otel_context.detach(token)


class Tracing:
    """One process's span export: the Temporal interceptor's spans and the executions' own."""

    def __init__(self, endpoint: str, service: str = "mint"):
        self.resource = Resource.create({"service.name": service})
        self.provider = TracerProvider(resource=self.resource)
        url = endpoint.rstrip("/") + "/v1/traces"  # what the standard variable means for traces
        self.processor = BatchSpanProcessor(
            OTLPSpanExporter(endpoint=url), schedule_delay_millis=EXPORT_DELAY_MS
        )
        self.provider.add_span_processor(self.processor)

    def interceptor(self) -> TracingInterceptor:
        """Temporal's tracing interceptor, on this export: give it to the client (workers share it)."""
        return TracingInterceptor(self.provider.get_tracer("temporalio"))

    def export_trace(self, trace_: JsonObject, execution_id: str) -> None:
        """Queue an execution's spans (built from its trace) for export."""
        for span in spans_of(trace_, execution_id, self.resource):
            self.processor.on_end(span)

    def shutdown(self) -> None:
        """Send what is queued and stop."""
        self.provider.shutdown()


@dataclass
class _Open:
    name: str
    span_id: int
    parent_id: int
    start: int
    key: SpanKey | None = None
    attributes: dict[str, AttributeValue] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)


def spans_of(trace_: JsonObject, execution_id: str, resource: Resource) -> list[ReadableSpan]:
    """The finished spans of a trace (infra/telemetry/traces.py builds it): the execution, each run, step, model
    call and tool call. A span's parent is what was open around it in its run (its step, or the run), a run's
    the step that holds it."""
    listed = trace_.get("items")
    items = [i for i in listed if isinstance(i, dict)] if isinstance(listed, list) else []
    if not items:
        return []
    spans = _Spans(execution_id, resource)
    for index, item in enumerate(items):
        spans.add(index, item)
    last = items[-1]
    outcome = _object(last.get("data")).get("outcome") if last.get("type") == "run_end" else None
    root = _Open(f"execution {execution_id}", root_span_id(execution_id), 0, _nanos(items[0].get("at")))
    root.attributes = {"mint.execution_id": execution_id}
    if isinstance(outcome, str) and outcome:
        root.attributes["mint.outcome"] = outcome
    spans.finish(root, _nanos(last["at"]), outcome == "failed")
    return spans.done


class _Spans:
    """Pairs a trace's start and end items into spans."""

    def __init__(self, execution_id: str, resource: Resource):
        self.execution_id, self.resource = execution_id, resource
        self.done: list[ReadableSpan] = []
        self.runs: dict[str, _Open] = {}
        self.stacks: dict[str, list[_Open]] = {}  # per run: its open steps and calls, innermost last

    def add(self, index: int, item: JsonObject) -> None:
        kind, run_id, at, data = (
            str(item["type"]),
            str(item["run_id"]),
            _nanos(item["at"]),
            _object(item["data"]),
        )
        stack = self.stacks.setdefault(run_id, [])
        innermost = stack[-1] if stack else self.runs.get(run_id)
        new_id = _span_id(f"{self.execution_id}:{index}")
        if kind == "run_start":
            parent_run = data.get("parent_run_id")
            holder = self._holder(parent_run if isinstance(parent_run, str) else None)
            parent_id = holder.span_id if holder is not None else root_span_id(self.execution_id)
            self.runs[run_id] = _Open(
                f"run {data.get('workflow')}", new_id, parent_id, at, None, _attributes(data)
            )
        elif kind in ("step_start", "llm_call_start", "tool_call_start") and innermost is not None:
            stack.append(
                _Open(
                    _span_name(kind, data), new_id, innermost.span_id, at, _key(kind, data), _attributes(data)
                )
            )
        elif kind in ("step_end", "llm_call_end", "tool_call_end"):
            found = next((s for s in reversed(stack) if s.key == _key(kind, data)), None)
            if found is not None:
                stack.remove(found)
                found.attributes.update(_attributes(data))
                self.finish(found, at, data.get("outcome") == "failed" or data.get("status") == "error")
        elif kind == "run_end" and run_id in self.runs:
            run = self.runs.pop(run_id)
            run.attributes.update(_attributes(data))
            self.finish(run, at, data.get("outcome") == "failed")
        elif kind in ("handoff", "guardrail") and innermost is not None:
            innermost.events.append(Event(kind, _attributes(data), at))

    def _holder(self, run_id: str | None) -> _Open | None:
        """What a run started inside: the innermost open step of the run that started it."""
        if run_id is None:
            return None
        stack = self.stacks.get(run_id)
        return stack[-1] if stack else self.runs.get(run_id)

    def finish(self, span: _Open, end: int, failed: bool = False) -> None:
        self.done.append(
            ReadableSpan(
                span.name,
                context=_context(self.execution_id, span.span_id),
                parent=_context(self.execution_id, span.parent_id) if span.parent_id else None,
                resource=self.resource,
                attributes=span.attributes,
                events=span.events,
                status=Status(StatusCode.ERROR) if failed else Status(StatusCode.UNSET),
                start_time=span.start,
                end_time=max(end, span.start),
                instrumentation_scope=SCOPE,
            )
        )


def _key(kind: str, data: JsonObject) -> SpanKey:
    """What pairs an end item with its start: a step's place, or the kind of call."""
    if kind in ("step_start", "step_end"):
        return (data.get("workflow"), data.get("step"), data.get("item"))
    return kind.rsplit("_", 1)[0]  # llm_call, tool_call


def _span_name(kind: str, data: JsonObject) -> str:
    if kind == "step_start":
        return f"step {data.get('workflow')}[{data.get('step')}]"
    if kind == "llm_call_start":
        return f"llm call {data.get('model') or ''}".strip()
    return f"tool call {data.get('name') or ''}".strip()


def _attributes(data: JsonObject) -> dict[str, AttributeValue]:
    """An item's data as span attributes (`mint.` names; values other than text and numbers as JSON)."""
    attributes: dict[str, AttributeValue] = {}
    for key, value in data.items():
        if value is None:
            continue
        attributes[f"mint.{key}"] = (
            value if isinstance(value, str | int | float | bool) else json.dumps(value, default=str)
        )
    return attributes


def _object(value: JsonValue) -> JsonObject:
    return value if isinstance(value, dict) else {}


def _nanos(at: JsonValue) -> int:
    """A trace item's time (ISO 8601 text) in nanoseconds since the epoch."""
    return int(datetime.fromisoformat(str(at)).timestamp() * 1_000_000_000)
