"""The raw floor of bench/pure_steps.py (in a module of its own for the workflow sandbox): a chain of steps
written in plain Python inside a workflow, doing a pure step's dict work, and the same chain recording each
output as a transition row written in one local activity, as Mint records its steps."""

import json
from datetime import timedelta

from temporalio import workflow

from contracts.temporal import WRITE_TRANSITIONS
from contracts.transitions import TransitionBatch, TransitionRow


@workflow.defn
class PureChainWorkflow:
    """`steps` dicts, each read from the last: the work of `{"evaluate": {"i": "$ _.i + 1"}}` in Python."""

    @workflow.run
    async def run(self, steps: int) -> int:
        outputs = [{"i": 0}]
        for _ in range(steps):
            outputs.append({"i": outputs[-1]["i"] + 1})
        return outputs[-1]["i"]


@workflow.defn
class RecordedChainWorkflow:
    """PureChainWorkflow, each output also a transition row (JSON text, id, time), all written in one batch
    by the transition writer: the least a recorded pure step can cost."""

    @workflow.run
    async def run(self, execution_id: str, steps: int) -> int:
        outputs, rows = [{"i": 0}], []
        for seq in range(1, steps + 1):
            outputs.append({"i": outputs[-1]["i"] + 1})
            row: TransitionRow = {
                "id": str(workflow.uuid4()),
                "seq": seq,
                "type": "init" if seq == 1 else "step",
                "output": json.dumps(outputs[-1]),
                "current": {"workflow": "main", "step": seq - 1, "scope_id": execution_id},
                "next": None,
                "step_label": None,
                "metadata": {},
                "created_at": workflow.now().isoformat(),
            }
            rows.append(row)
        batch = TransitionBatch(execution_id, "bench", rows, "running")
        await workflow.execute_local_activity(
            WRITE_TRANSITIONS, batch, start_to_close_timeout=timedelta(seconds=30)
        )
        return outputs[-1]["i"]
