"""A step whose expression or template would overrun fails cleanly, on the real stack (API, worker, Postgres,
Temporal): the execution ends `failed` with a clear error, and executions beside it run on and succeed.

Unbounded, these expressions would run for seconds inside a workflow task: Temporal's deadlock detector
would fail the task, the execution sit in `starting` ignoring cancel while the task was retried forever,
and the API (same process) freeze while the GIL was held.
"""

from __future__ import annotations

import asyncio

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError

from tests.helpers import create_agent, create_task, start, transitions, wait_for_status
from tests.stack import TEST_ENCRYPTION_KEY
from tests.test_replay import _replayer

OVERRUNS = {
    "method-as-value": "$ len(map(list(range(100000)).count, range(6000)))",
    "strftime": "$ len(map(datetime.now().strftime, ['%c' * 500] * 10000))",
    "sample-counts": "$ random.sample(range(10), 10 ** 6, counts=[10 ** 6] * 10)",
    "unicode-regex": "$ re.search('\\\\p{L}{300}x', 'é' * 100000)",
    "regex-matches": "$ len(re.findall('', 'a' * 1000000))",
    "hash-flood": "$ len(set(list(range(0, 20000 * (2 ** 61 - 1), 2 ** 61 - 1))))",
}
# Errors of every kind an expression can raise fail the step, not the workflow task.
ERRORS = {
    "overflow": ("$ math.exp(1000)", "OverflowError"),
    "unicode": ("$ urllib.parse.quote('\\ud800')", "UnicodeEncodeError"),
}
# Each step nests the value one level deeper: past what any recursive walk after it could take, the step
# that would go deeper fails (before, the walk overflowed Python's stack).
NESTING = {
    "name": "nesting",
    "main": [
        {"evaluate": {"ok": "$ 1"}},
        {"foreach": {"in": "$ list(range(400))", "do": {"set": {"x": "$ [state.get('x')]"}}}},
    ],
}


def _task(name: str, expression: str) -> dict:
    return {"name": name, "main": [{"evaluate": {"ok": "$ 1"}}, {"evaluate": {"x": expression}}]}


async def _launch(api, spec: dict, input_: object = None) -> str:
    agent = await create_agent(api)
    created = await create_task(api, agent["id"], spec)
    return (await start(api, created["id"], input_))["id"]


async def test_overrunning_steps_fail_cleanly_while_another_execution_succeeds(api, temporal_env, store):
    # Runs across all the failures: a timer, then pure steps on the same worker.
    steady = {
        "name": "steady",
        "main": [
            {"evaluate": {"n": "$ 1"}},
            {"sleep": {"seconds": 2}},
            {"evaluate": {"n": "$ sum(range(1000))"}},
            {"log": "done {{ _.n }}"},
        ],
    }
    other = await _launch(api, steady)
    failing = {name: await _launch(api, _task(name, source)) for name, source in OVERRUNS.items()}
    failing |= {name: await _launch(api, _task(name, source)) for name, (source, _) in ERRORS.items()}
    failing["nesting"] = await _launch(api, NESTING)
    ended = dict(
        zip(failing, await asyncio.gather(*(wait_for_status(api, i) for i in failing.values())), strict=True)
    )
    messages = {name: "LimitExceeded" for name in OVERRUNS} | {name: m for name, (_, m) in ERRORS.items()}
    messages["nesting"] = "nested more than 128 levels"
    for name, execution in ended.items():
        assert execution["status"] == "failed", (name, execution)
        assert messages[name] in execution["error"], (name, execution["error"])
        rows = await transitions(api, execution["id"])
        assert [r["type"] for r in rows][:2] == ["init", "step"] and rows[-1]["type"] == "error", name
        assert rows[-1]["output"]["error"] == execution["error"]
    assert (await api.get(f"/executions/{other}")).json()["status"] in {"running", "succeeded"}
    done = await wait_for_status(api, other)
    assert done["status"] == "succeeded" and done["output"] == {"n": 499500}, done  # a log passes `_` on


@pytest.mark.parametrize("name", ["method-as-value", "unicode-regex"])
async def test_a_step_failed_by_its_budget_fails_in_one_workflow_task_and_replays(
    api, temporal_env, store, name
):
    """The refusal is deterministic: no workflow task failed (no deadlock, no retry), and replaying the
    history gives the same failure."""
    execution_id = await _launch(api, _task(name, OVERRUNS[name]))
    assert (await wait_for_status(api, execution_id))["status"] == "failed"
    handle = temporal_env.client.get_workflow_handle(execution_id)
    with pytest.raises(WorkflowFailureError):  # the row says failed a moment before the workflow closes
        await handle.result()
    history = await handle.fetch_history()
    kinds = [event.event_type for event in history.events]
    assert EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED not in kinds
    assert kinds[-1] == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED
    result = await _replayer(store, (TEST_ENCRYPTION_KEY,)).replay_workflow(
        history, raise_on_replay_failure=False
    )
    assert result.replay_failure is None, result.replay_failure
