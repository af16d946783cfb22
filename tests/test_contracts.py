"""The contracts at the Temporal boundary (contracts/): every registered activity and workflow takes and
returns the types contracts/temporal.py lists for its name, and Mint's JSON conversion of those types is
the SDK's, byte for byte, without its copies."""

from __future__ import annotations

import typing
from typing import Any

import pytest
from temporalio import activity, workflow
from temporalio.converter import DefaultPayloadConverter

from activities.docs import DocActivities
from activities.http import HttpActivities
from activities.integrations import IntegrationActivities
from activities.mcp import McpActivities
from activities.models import ModelActivities
from activities.sessions import SessionActivities
from activities.system import SystemActivities
from activities.transitions import TransitionWriter
from activities.worker_calls import WorkerCalls
from contracts.background import Compressed, DocRef, RunToolRequest
from contracts.calls import CallAnswer, McpTool, ModelAnswer, ModelRequest, Owner
from contracts.executions import ChunkOutcome, ExecutionParams, MapChunk, ResumeInput, ResumePoint
from contracts.temporal import ACTIVITIES, SIGNALS, WORKFLOWS
from contracts.transitions import Position, TransitionBatch, TransitionRow
from infra.temporal.payload_codec import MintPayloadConverter
from workflows.docs import IndexDocWorkflow
from workflows.execution import MapChunkWorkflow, TaskExecutionWorkflow
from workflows.sessions import CompressSessionWorkflow
from workflows.tools import RunToolWorkflow

ACTIVITY_FUNCTIONS = [
    TransitionWriter.write_transitions,
    TransitionWriter.mark_failed,
    ModelActivities.call_model,
    HttpActivities.call_api,
    SystemActivities.call_system,
    McpActivities.call_mcp,
    McpActivities.list_mcp_tools,
    IntegrationActivities.call_integration,
    DocActivities.search_docs,
    DocActivities.index_doc,
    DocActivities.mark_doc_failed,
    SessionActivities.compress_session,
    WorkerCalls.call_in_worker,
    WorkerCalls.call_batch_in_worker,
    WorkerCalls.run_steps_in_worker,
]
WORKFLOW_CLASSES = [
    TaskExecutionWorkflow,
    MapChunkWorkflow,
    IndexDocWorkflow,
    CompressSessionWorkflow,
    RunToolWorkflow,
]


def _signature(function: Any) -> tuple[Any, Any]:
    """(the one argument's type, the return type), as the SDK reads them."""
    hints = typing.get_type_hints(function)
    returned = hints.pop("return")
    (argument,) = hints.values()
    return argument, None if returned is type(None) else returned


def test_every_activity_is_typed_as_its_contract():
    found = {activity._Definition.must_from_callable(f).name: _signature(f) for f in ACTIVITY_FUNCTIONS}
    assert found == ACTIVITIES


def test_every_workflow_is_typed_as_its_contract():
    found = {}
    for cls in WORKFLOW_CLASSES:
        definition = workflow._Definition.must_from_class(cls)
        found[definition.name] = _signature(definition.run_fn)
        for name, signal in definition.signals.items():
            assert name in SIGNALS and _signature(signal.fn) == (SIGNALS[name], None)
    assert found == WORKFLOWS


def _row(seq: int) -> TransitionRow:
    where = Position("main", seq, "scope").to_dict()
    return {
        "id": f"id-{seq}",
        "seq": seq,
        "type": "step",
        "output": '{"a": [1, 2]}',
        "current": where,
        "next": None,
        "step_label": None,
        "metadata": {"usage": {"prompt_tokens": 3}},
        "created_at": "2025-01-01T00:00:00+00:00",
    }


PARAMS = ExecutionParams(
    "e",
    "d",
    {"name": "t", "main": [{"evaluate": {"x": "$ 1"}}]},
    "dollar",
    {"in": [1, None, "x"]},
    resume=ResumePoint({"name": "main", "scope_id": "s", "inputs": [1]}, 1, 7, {"k": 1}, {}),
)
PAYLOADS = [
    (TransitionBatch("e", "d", [_row(1), _row(2)], "running"), TransitionBatch),
    (PARAMS, ExecutionParams),
    (ExecutionParams("e", "d", {}, "seed", None), ExecutionParams),
    (MapChunk(PARAMS, [{"log": "x"}], "main[0].map", {}, {}, {}, [1, 2], 0, 2), MapChunk),
    (ChunkOutcome([1], [_row(1)], returned=True, return_value={"r": 1}), ChunkOutcome),
    (ResumeInput(3, {"ok": True}), ResumeInput),
    (
        ModelRequest(None, [{"role": "user", "content": "hi"}], {}, [], None, None, "t:main[0]", Owner("d")),
        ModelRequest,
    ),
    (ModelAnswer({"choices": []}, {}, None, 1), ModelAnswer),
    (CallAnswer([1, {"b": 2}], 2), CallAnswer),
    ([McpTool("add", "adds", {"type": "object"})], list[McpTool]),
    (RunToolRequest(Owner("d", None), {"name": "t", "type": "system"}, {"a": 1}), RunToolRequest),
    (DocRef("d", "doc"), DocRef),
    (Compressed(3), Compressed),
]


@pytest.mark.parametrize(("value", "hint"), PAYLOADS, ids=[type(v).__name__ for v, _ in PAYLOADS])
def test_payloads_convert_as_the_sdk_converts_them(value, hint):
    mint, sdk = MintPayloadConverter(), DefaultPayloadConverter()
    ours, theirs = mint.to_payloads([value]), sdk.to_payloads([value])
    assert ours[0].data == theirs[0].data  # the same JSON on the wire, so histories are unchanged
    assert mint.from_payloads(ours, [hint]) == sdk.from_payloads(theirs, [hint]) == [value]


def test_a_payload_from_before_a_field_was_added_takes_its_default():
    sdk = DefaultPayloadConverter()
    (old,) = sdk.to_payloads([{"wait_seq": 2}])
    assert MintPayloadConverter().from_payloads([old], [ResumeInput]) == [ResumeInput(2, None)]


def test_a_payload_of_the_wrong_shape_is_refused():
    (wrong,) = DefaultPayloadConverter().to_payloads([[1, 2]])
    with pytest.raises(TypeError):
        MintPayloadConverter().from_payloads([wrong], [TransitionBatch])


def test_encoding_does_not_copy_the_values_inside():
    rows = [_row(1)]
    batch = TransitionBatch("e", "d", rows, "running")
    (decoded,) = MintPayloadConverter().from_payloads(
        MintPayloadConverter().to_payloads([batch]), [TransitionBatch]
    )
    # Rows arrive as the JSON objects they are (TypedDicts), not rebuilt one field at a time.
    assert type(decoded.transitions[0]) is dict and decoded.transitions == rows
