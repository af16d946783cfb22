"""Executions replay deterministically against the current workflow code.

tests/histories/ holds histories recorded by `python -m tests.record_histories`; if a change to the
interpreter would break executions already running, replaying them here fails.
"""

import json
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from infra.temporal.payload_codec import data_converter
from process.worker import workflow_runner
from tests.helpers import create_agent, create_task, start, wait_for_status
from tests.stack import TEST_ENCRYPTION_KEY
from workflows.execution import CURRENT_PATCHES, MapChunkWorkflow, TaskExecutionWorkflow

HISTORIES = sorted((Path(__file__).parent / "histories").glob("*.json"))


def _replayer(store, keys: tuple[str, ...]) -> Replayer:
    return Replayer(
        workflows=[TaskExecutionWorkflow, MapChunkWorkflow],
        workflow_runner=workflow_runner(strict=True),  # re-imports the interpreter: catches nondeterminism
        # Recorded histories are plain, so they replay without a key (with one, their plain payloads would be
        # refused); fresh ones are sealed with the test stacks' key.
        data_converter=data_converter(store.pool, keys=keys),
    )


@pytest.mark.parametrize("path", HISTORIES, ids=[p.stem for p in HISTORIES])
async def test_recorded_histories_replay(store, path):
    history = WorkflowHistory.from_json(path.stem, json.loads(path.read_text()))
    result = await _replayer(store, ()).replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, result.replay_failure


def test_histories_are_recorded():
    assert {p.stem for p in HISTORIES} >= {
        "pure_steps",
        "fan_out",
        "chunked_fan_out",
        "wait_and_resume",
        "yields",
        "failure",
        "ui_status",
        "guardrail_trip",
        "handoff",  # a prompt step handed from one agent to another
        "by_reference",  # a tool call whose argument is a reference to an earlier result
        "integration_before_providers",  # an integration step recorded before the providers
        "early_resume_before_patch",  # a resume dropped for coming before its wait
        "batched_fan_out",  # a map whose calls ran in a batch (workflows/call_batches.py)
        "step_run",  # steps that ran as one run (durability: run, workflows/step_runs.py)
    }


BUSY_TASK = {
    "name": "replay me",
    "main": [
        {
            "evaluate": {
                "pick": "$ randint(1000)",
                "coin": "$ random()",
                "now": "$ datetime.now().isoformat()",
            }
        },
        {"over": "$ list(range(5))", "map": {"evaluate": {"x": "$ _ * 2"}}, "parallelism": 2},
        {"parallel": [{"evaluate": {"a": "$ 1"}}, {"sleep": {"seconds": 1}}]},
        {"set": {"seen": "$ steps[0].output['pick']"}},
        {"return": {"pick": "$ state['seen']"}},
    ],
}


async def test_a_fresh_history_replays(api, temporal_env, store):
    task = await create_task(api, (await create_agent(api))["id"], BUSY_TASK)
    execution = await start(api, task["id"])
    done = await wait_for_status(api, execution["id"])
    assert done["status"] == "succeeded", done
    history = await temporal_env.client.get_workflow_handle(execution["id"]).fetch_history()
    result = await _replayer(store, (TEST_ENCRYPTION_KEY,)).replay_workflow(
        history, raise_on_replay_failure=False
    )
    assert result.replay_failure is None


async def test_a_fresh_execution_records_no_patch_markers(api, temporal_env):
    """An execution started now takes every change of behaviour from its input (ExecutionParams.patches):
    its history has no patch marker and no TemporalChangeVersion upsert, each a command on every start."""
    task = await create_task(api, (await create_agent(api))["id"], BUSY_TASK)
    execution = await start(api, task["id"])
    assert (await wait_for_status(api, execution["id"]))["status"] == "succeeded"
    history = await temporal_env.client.get_workflow_handle(execution["id"]).fetch_history()
    recorded = b"".join(event.SerializeToString() for event in history.events)
    assert b"TemporalChangeVersion" not in recorded
    assert not [p for p in CURRENT_PATCHES if p.encode() in recorded]
