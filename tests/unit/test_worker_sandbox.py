"""The rest of this layer runs workflows outside Temporal's sandbox, for speed (the sandbox re-imports the
interpreter for every run). This runs one task that uses every step kind on process/worker.py's own sandbox, so
nothing the interpreter does is refused there."""

from __future__ import annotations

import uuid

from temporalio.worker import Worker

from tests.unit.conftest import WORKFLOWS, workflow_runner
from tests.unit.fakes import completion
from tests.unit.harness import Harness, task

EVERY_KIND = task(
    {"set": {"n": "$ _.n"}},
    {"get": "n"},
    {"log": "n is {{ _ }}"},
    {"evaluate": {"xs": "$ list(range(_))"}},
    {"foreach": {"in": "$ _.xs", "do": {"evaluate": {"v": "$ _ * 2"}}}},
    {"over": "$ _", "map": {"evaluate": {"v": "$ _.v + 1"}}, "reduce": "$ results + [_.v]"},
    {"parallel": [{"evaluate": {"sum": "$ sum(_)"}}, {"sleep": {"hours": 1}}]},
    {"if": "$ _[0].sum > 0", "then": {"workflow": "helper", "arguments": "$ _[0]"}, "else": {"error": "no"}},
    {
        "switch": [
            {"case": "$ False", "then": {"return": 0}},
            {"case": "_", "then": {"tool": "ping", "arguments": {}}},
        ]
    },
    {"prompt": "say {{ _.status_code }}", "unwrap": True},
    {"search": {"query": "$ _"}},
    {"return": {"docs": "$ _.docs", "total": "$ steps[6].output[0].sum"}},
    helper=[{"evaluate": {"got": "$ _.sum"}}],
    tools=[{"name": "ping", "type": "api_call", "api_call": {"url": "https://x.example"}}],
)


async def test_a_task_using_every_step_kind_runs_on_the_workers_sandbox(fresh_env, fakes):
    queue = f"unit-sandboxed-{uuid.uuid4()}"
    fakes.model = lambda request: completion("found")
    fakes.docs = lambda request: [{"id": request["text"]}]
    async with Worker(
        fresh_env.client,
        task_queue=queue,
        workflows=WORKFLOWS,
        activities=fakes.activities(),
        workflow_runner=workflow_runner(),
    ):
        done = await Harness(fresh_env, queue, fakes).succeed(EVERY_KIND, {"n": 3})
    assert done.output == {"docs": [{"id": "found"}], "total": 9}  # (0*2+1) + (1*2+1) + (2*2+1)
