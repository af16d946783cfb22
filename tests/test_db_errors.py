"""Values Postgres refuses: explained in words (never its SQL, argument numbers or DETAIL lines), and a
transition batch it refuses fails at once instead of being retried forever."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import pytest
from temporalio.exceptions import ApplicationError

from activities.transitions import TransitionWriter
from contracts.transitions import TransitionBatch
from infra.store.db_errors import PERMANENT, explain
from tests.helpers import create_agent, create_task, start, wait_for_status

INTERNALS = ("DETAIL", "$1", "query argument", "invalid input", "SELECT", "jsonb")


@pytest.mark.parametrize(
    ("sql", "value", "words"),
    [
        pytest.param("SELECT $1::text", "a\x00b", "NUL character", id="nul_in_text"),
        pytest.param("SELECT $1::jsonb", {"a": "\x00"}, "NUL character", id="nul_in_jsonb"),
        pytest.param("SELECT $1::text", "a\ud800", "lone surrogate", id="surrogate_in_text"),
        pytest.param("SELECT $1::text::jsonb", '"\\ud800"', "lone surrogate", id="surrogate_escape_in_jsonb"),
        pytest.param("SELECT $1::jsonb", {"a": float("nan")}, "NaN", id="nan_in_jsonb"),
        pytest.param("SELECT $1::int", 2**40, "out of range", id="integer_out_of_range"),
    ],
)
async def test_a_refused_value_is_explained_in_words(store, sql, value, words):
    with pytest.raises(PERMANENT) as refused:
        await store.pool.fetchval(sql, value)
    message = explain(refused.value)
    assert words in message, message
    for internal in INTERNALS:
        assert internal not in message, message


async def test_a_batch_postgres_refuses_fails_at_once_naming_its_steps(api, store):
    task = await create_task(
        api, (await create_agent(api))["id"], {"name": "t", "main": [{"wait_for_input": {"info": "$ 1"}}]}
    )
    execution = await start(api, task["id"])
    await wait_for_status(api, execution["id"], {"awaiting_input"})
    row = await store.pool.fetchrow(
        "SELECT developer_id, last_seq FROM executions WHERE id = $1", execution["id"]
    )
    # The workflow checks what it records (workflows/transition_log.py); this batch skips that check.
    transition = {
        "id": str(uuid.uuid4()),
        "seq": row["last_seq"] + 1,
        "type": "step",
        "output": json.dumps({"text": "a\x00b"}),
        "current": {"workflow": "main", "step": 1, "scope_id": str(uuid.uuid4())},
        "next": None,
        "step_label": None,
        "metadata": {},
        "created_at": datetime.now(UTC).isoformat(),
    }
    batch = TransitionBatch(execution["id"], str(row["developer_id"]), [transition], "running")

    with pytest.raises(ApplicationError) as failed:
        await TransitionWriter(store.pool).write_transitions(batch)

    assert failed.value.non_retryable and failed.value.type == "BadData"
    message = failed.value.message
    assert "main[1]" in message and "NUL character" in message, message
    for internal in INTERNALS:
        assert internal not in message, message
    assert (
        await store.pool.fetchval("SELECT last_seq FROM executions WHERE id = $1", execution["id"])
        == row["last_seq"]
    ), "nothing was written"
    await api.put(f"/executions/{execution['id']}", json={"status": "cancelled"})
    assert (await wait_for_status(api, execution["id"]))["status"] == "cancelled"
