"""Large values: a 20 MB step output round-trips through the API while Temporal only ever sees references."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from google.protobuf.message import Message
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent

from contracts.temporal import SEARCH_ATTRIBUTES
from infra.temporal.claim_check import THRESHOLD_BYTES, ClaimCheckCodec
from infra.temporal.payload_codec import ENCRYPTED, WORKFLOW_ID, EncryptionCodec
from tests.helpers import run_task, transitions
from tests.stack import TEST_ENCRYPTION_KEY
from workflows.calls import CALLS_IN_WORKER_PATCH
from workflows.interpreter import JULEP_LOOPS_PATCH
from workflows.values import RESULTS_PATCH
from workflows.visibility import MINT_STATUS_PATCH

TWENTY_MB = 20 * 1024 * 1024


@pytest.fixture
def big_server():
    body = b"m" * TWENTY_MB

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def _search_attributes(event: HistoryEvent) -> dict[str, Payload]:
    """The search attributes an event sets (a workflow's start, an upsert), by name."""
    for field in (
        "workflow_execution_started_event_attributes",
        "upsert_workflow_search_attributes_event_attributes",
    ):
        if event.HasField(field):
            return dict(getattr(event, field).search_attributes.indexed_fields)
    return {}


def _payloads(message: Message) -> list[Payload]:
    """Every Payload anywhere inside a protobuf message (fields, repeated fields and maps)."""
    found: list[Payload] = []
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        if field.message_type.GetOptions().map_entry:
            items = list(value.values())
        elif field.is_repeated:
            items = list(value)
        else:
            items = [value]
        for item in items:
            if isinstance(item, Payload):
                found.append(item)
            elif isinstance(item, Message):
                found += _payloads(item)
    return found


# The patches an execution started today records (their ids are in the clear, as Temporal needs them).
PATCHES = {
    JULEP_LOOPS_PATCH,
    CALLS_IN_WORKER_PATCH,
    MINT_STATUS_PATCH,
    RESULTS_PATCH,
}


async def test_a_20_mb_output_round_trips_and_history_holds_only_references(api, temporal_env, big_server):
    task = {
        "name": "big",
        "tools": [{"name": "fetch", "type": "api_call", "api_call": {"method": "GET", "url": big_server}}],
        "main": [
            {"tool": "fetch", "arguments": {}},
            {"evaluate": {"size": "$ len(_.content)", "same": "$ _.content"}},
        ],
    }
    execution, rows = await run_task(api, task)
    assert execution["status"] == "succeeded", execution
    assert execution["output"]["size"] == TWENTY_MB and len(execution["output"]["same"]) == TWENTY_MB
    assert len(rows[1]["output"]["content"]) == TWENTY_MB  # the tool step's transition holds the real value
    fetched = (await api.get(f"/executions/{execution['id']}")).json()
    assert fetched["output"]["same"] == "m" * TWENTY_MB

    history = await temporal_env.client.get_workflow_handle(execution["id"]).fetch_history()
    sealed, plain = [], []
    for event in history.events:
        indexed = _search_attributes(event)
        # In the clear by design: Mint's search attributes (the task's and agent's names, the developer's id,
        # the status), which Temporal reads to index them, and the interpreter's patch ids.
        assert set(indexed) <= {*(a.name for a in SEARCH_ATTRIBUTES), "TemporalChangeVersion"}, indexed
        if "TemporalChangeVersion" in indexed:
            assert set(json.loads(indexed["TemporalChangeVersion"].data)) <= PATCHES, indexed
        skip = {payload.SerializeToString() for payload in indexed.values()}
        for payload in _payloads(event):
            if payload.SerializeToString() in skip:
                continue
            encrypted = payload.metadata.get("encoding") == ENCRYPTED
            (sealed if encrypted else plain).append((event.event_type, payload))
    assert sealed, "the walker found no payloads at all"
    # Each is bound to this workflow (activities' inputs and results too), so none can be pasted elsewhere.
    assert {p.metadata[WORKFLOW_ID] for _, p in sealed} == {execution["id"].encode()}
    # Else in the clear: only the SDK's own bookkeeping of local activities (type, attempt, times) and of the
    # interpreter's patches (their ids, in a marker), no values.
    for event_type, payload in plain:
        data = json.loads(payload.data)
        assert event_type == EventType.EVENT_TYPE_MARKER_RECORDED, payload
        assert data.keys() >= {"activity_type", "attempt"} or (
            data.keys() == {"id", "deprecated"} and data["id"] in PATCHES
        ), payload
    payloads = await EncryptionCodec((TEST_ENCRYPTION_KEY,)).decode([p for _, p in sealed])
    assert max(len(p.data) for p in payloads) <= THRESHOLD_BYTES
    assert any(p.metadata.get("encoding") == b"mint/claim-check" for p in payloads)
    assert len(await transitions(api, execution["id"])) == execution["transition_count"]


async def test_a_payload_rewritten_in_place_after_encoding_still_decodes(store):
    """The SDK swaps each payload it encodes for the encoded one in place; the codec's cache must not
    follow the swap (it once returned the reference itself, and a child workflow's large result failed)."""
    codec = ClaimCheckCodec(store.pool)
    original = Payload(metadata={"encoding": b"json/plain"}, data=b'"' + b"x" * (THRESHOLD_BYTES + 1) + b'"')
    expected = original.SerializeToString()
    (reference,) = await codec.encode([original])
    original.CopyFrom(reference)  # what the SDK's payload visitor does
    (decoded,) = await codec.decode([reference])
    assert decoded.SerializeToString() == expected
