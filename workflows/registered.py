"""Every workflow Mint runs, in one list: process/worker.py registers them on the main queue, and the fast test layer
(tests/unit/conftest.py) on its worker, without importing process/worker.py and every activity's clients with it."""

from __future__ import annotations

from workflows.docs import IndexDocWorkflow
from workflows.execution import MapChunkWorkflow, TaskExecutionWorkflow
from workflows.scheduled import ScheduledRunWorkflow
from workflows.sessions import CompressSessionWorkflow
from workflows.tools import RunToolWorkflow
from workflows.webhooks import WebhookDeliveryWorkflow

WORKFLOWS = [
    TaskExecutionWorkflow,
    MapChunkWorkflow,
    IndexDocWorkflow,
    CompressSessionWorkflow,
    RunToolWorkflow,
    ScheduledRunWorkflow,
    WebhookDeliveryWorkflow,
]
