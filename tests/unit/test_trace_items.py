"""How a trace reads the handoff and guardrail notes other features put in transition metadata
(`metadata.handoff: {from, to}`, `metadata.guardrail: {name, ...}`), from transitions as the store holds
them. (Executions that make them are tested through the API where those features are.)"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from contracts.records.executions import Position, Transition
from infra.telemetry.traces import build_trace

RUN = str(uuid.uuid4())


def _row(kind: str, at: str, step: int = 0, output: Any = None, **metadata: Any) -> Transition:
    return Transition(
        id=str(uuid.uuid4()),
        execution_id=RUN,
        seq=0,
        type=kind,
        output=output,
        current=Position("main", step, RUN),
        next=None,
        step_label=None,
        metadata=metadata,
        created_at=datetime.fromisoformat(f"2026-01-01T00:00:{at}+00:00"),
    )


def test_a_handoff_and_a_guardrail_trip_appear_where_they_were_recorded():
    usage = {"prompt_tokens": 3, "completion_tokens": 2}
    rows = [
        _row("init", "00", output={}),
        _row(
            "step",
            "01",
            call="model",
            turn=1,
            usage=usage,
            cost=0.5,
            model="m",
            started_at="2026-01-01T00:00:00+00:00",
            handoff={"from": "triage", "to": "billing"},
        ),
        _row("step", "02", usage=usage, cost=0.5, model="m", started_at="2026-01-01T00:00:01+00:00"),
        _row(
            "error",
            "03",
            step=1,
            output={"error": "OutputGuardrailTripwire: no refunds"},
            error_type="OutputGuardrailTripwire",
            guardrail={"name": "no_refunds", "stage": "output", "allowed": False},
        ),
    ]
    execution_id = str(uuid.uuid4())
    trace = build_trace({"id": execution_id}, rows)
    assert trace["trace_id"] == uuid.UUID(execution_id).hex
    assert [(i["type"], i["at"][-11:-6]) for i in trace["items"]] == [
        ("run_start", "00:00"),
        ("step_start", "00:00"),
        ("llm_call_start", "00:00"),
        ("llm_call_end", "00:01"),
        ("handoff", "00:01"),
        ("llm_call_start", "00:01"),
        ("llm_call_end", "00:02"),
        ("step_end", "00:02"),
        ("guardrail", "00:03"),
        ("run_end", "00:03"),
    ]
    items = trace["items"]
    assert items[4]["data"] == {"from": "triage", "to": "billing"}
    assert items[3]["data"]["tokens"] == 5 and items[3]["data"]["cost"] == 0.5
    assert items[8]["data"] == {"name": "no_refunds", "stage": "output", "allowed": False}
    assert items[9]["data"] == {
        "outcome": "failed",
        "error": "OutputGuardrailTripwire: no refunds",
        "error_type": "OutputGuardrailTripwire",
    }
    assert {i["run_id"] for i in items} == {RUN}


def test_a_prompt_guardrails_verdict_is_a_model_call_and_a_guardrail_item_not_a_step():
    usage = {"prompt_tokens": 3, "completion_tokens": 2}
    verdict = {"guardrail": "polite", "allowed": True, "reason": "fine"}
    rows = [
        _row("init", "00", output={}),
        _row(
            "step", "01", output=verdict, guardrail="polite", stage="input", usage=usage, cost=0.1, model="m"
        ),
        _row("step", "02", output={"x": 1}),
        _row("finish", "03", step=0, output={"x": 1}),
    ]
    items = build_trace({"id": str(uuid.uuid4())}, rows)["items"]
    assert [i["type"] for i in items] == [
        "run_start",
        "llm_call_start",
        "llm_call_end",
        "guardrail",
        "step_start",
        "step_end",
        "run_end",
    ]
    assert items[3]["data"] == {"name": "polite", "stage": "input", "allowed": True, "reason": "fine"}
