"""Executions replay deterministically: randomness, time and concurrency come from Temporal."""

from temporalio.worker import Replayer

from tests.helpers import create_agent, create_task, start, wait_for_status
from worker import workflow_runner
from workflows.execution import TaskExecutionWorkflow

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


async def test_histories_replay_without_nondeterminism(api, temporal_env):
    task = await create_task(api, (await create_agent(api))["id"], BUSY_TASK)
    execution = await start(api, task["id"])
    done = await wait_for_status(api, execution["id"])
    assert done["status"] == "succeeded", done
    history = await temporal_env.client.get_workflow_handle(execution["id"]).fetch_history()
    replayer = Replayer(workflows=[TaskExecutionWorkflow], workflow_runner=workflow_runner())
    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None
