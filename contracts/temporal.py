"""Every name Mint registers with Temporal, and which payload type each takes and returns.

Workflows call activities by name (they cannot import activities/: Temporal's sandbox runs them, and the
layers forbid it), and the API starts workflows by name; both sides take the names and types from here.
ACTIVITIES and WORKFLOWS are the table tests/test_contracts.py checks the registered functions against, so
a signature that drifts from its contract fails a test instead of a running execution."""

from __future__ import annotations

from typing import Any

from temporalio.common import Priority, SearchAttributeKey

from contracts.background import Compressed, DocFailure, DocRef, IndexedDoc, RunToolRequest, SessionRef
from contracts.calls import (
    ApiCallRequest,
    BatchOutcome,
    CallAnswer,
    CallBatch,
    IntegrationCallRequest,
    McpCallRequest,
    McpIntegration,
    McpTool,
    ModelAnswer,
    ModelRequest,
    SearchRequest,
    SystemCallRequest,
    WorkerCall,
)
from contracts.executions import ChunkOutcome, ExecutionParams, MapChunk, ResumeInput
from contracts.step_runs import StepRun, StepRunOutcome
from contracts.transitions import TransitionBatch

# Workflows.
TASK_EXECUTION_WORKFLOW = "TaskExecutionWorkflow"
MAP_CHUNK_WORKFLOW = "MapChunkWorkflow"
INDEX_DOC_WORKFLOW = "IndexDocWorkflow"
COMPRESS_SESSION_WORKFLOW = "CompressSessionWorkflow"
RUN_TOOL_WORKFLOW = "RunToolWorkflow"

# TaskExecutionWorkflow's signal (the method's name, which Temporal uses when none is given).
RESUME_SIGNAL = "resume"

# Search attributes (all Keyword), by which the Temporal UI's workflow list shows and filters executions
# (`MintTask="daily motivation"`). They must be registered on the namespace first: `mint up` registers them on
# its dev server (process/local_services.py); on another cluster an operator does (docs/operations.md), and until
# then Mint sets none (infra/temporal/search_attributes.py).
MINT_TASK = SearchAttributeKey.for_keyword("MintTask")  # the task's name
MINT_AGENT = SearchAttributeKey.for_keyword("MintAgent")  # the agent's name
MINT_DEVELOPER = SearchAttributeKey.for_keyword("MintDeveloper")  # the developer's (tenant's) id
MINT_STATUS = SearchAttributeKey.for_keyword("MintStatus")  # the execution's status, kept current
SEARCH_ATTRIBUTES = (MINT_TASK, MINT_AGENT, MINT_DEVELOPER, MINT_STATUS)

# Activities.
WRITE_TRANSITIONS = "write_transitions"
MARK_FAILED = "mark_failed"
CALL_MODEL = "call_model"
CALL_API = "call_api"
CALL_SYSTEM = "call_system"
CALL_MCP = "call_mcp"
CALL_INTEGRATION = "call_integration"
LIST_MCP_TOOLS = "list_mcp_tools"
SEARCH_DOCS = "search_docs"
INDEX_DOC = "index_doc"
MARK_DOC_FAILED = "mark_doc_failed"
COMPRESS_SESSION = "compress_session"
CALL_IN_WORKER = "call_in_worker"
# A fan-out's api_call steps, in batches the workflow's own worker runs (workflows/call_batches.py).
CALL_BATCH_IN_WORKER = "call_batch_in_worker"
# A run of consecutive pure and api_call steps in the workflow's own worker (`durability: run`).
RUN_STEPS_IN_WORKER = "run_steps_in_worker"
# The activities a batch may run: each answers a CallAnswer and times itself (its deadline is its request's).
BATCHED_CALLS = frozenset({CALL_API})
# The activities a step may run through CALL_IN_WORKER.
WORKER_CALLS = frozenset({CALL_MODEL, CALL_API, CALL_SYSTEM, CALL_MCP, CALL_INTEGRATION, SEARCH_DOCS})

# The kinds of activity an operator may give task queues of their own (MINT_MODEL_QUEUE, MINT_HTTP_QUEUE,
# MINT_WRITE_QUEUE), to size and scale the workers of each apart; `workflows` is the main queue
# (MINT_TASK_QUEUE), where workflows and every other activity run. A worker polls the kinds it is given
# (`mint worker --queues`); a kind without a queue of its own runs on the main one.
QUEUE_KINDS: dict[str, tuple[str, ...]] = {
    "models": (CALL_MODEL,),
    "http": (CALL_API, CALL_MCP, LIST_MCP_TOOLS, CALL_INTEGRATION),
    "writes": (WRITE_TRANSITIONS,),
}
WORKFLOWS_KIND = "workflows"

# name -> (input type, result type).
ACTIVITIES: dict[str, tuple[Any, Any]] = {
    WRITE_TRANSITIONS: (TransitionBatch, None),
    MARK_FAILED: (TransitionBatch, None),
    CALL_MODEL: (ModelRequest, ModelAnswer),
    CALL_API: (ApiCallRequest, CallAnswer),
    CALL_SYSTEM: (SystemCallRequest, CallAnswer),
    CALL_MCP: (McpCallRequest, CallAnswer),
    CALL_INTEGRATION: (IntegrationCallRequest, CallAnswer),
    LIST_MCP_TOOLS: (McpIntegration, list[McpTool]),
    SEARCH_DOCS: (SearchRequest, CallAnswer),
    INDEX_DOC: (DocRef, IndexedDoc),
    MARK_DOC_FAILED: (DocFailure, None),
    COMPRESS_SESSION: (SessionRef, Compressed),
    CALL_IN_WORKER: (WorkerCall, Any),  # the named activity's result
    CALL_BATCH_IN_WORKER: (CallBatch, list[BatchOutcome]),  # in the order of the batch's calls
    RUN_STEPS_IN_WORKER: (StepRun, StepRunOutcome),
}
WORKFLOWS: dict[str, tuple[Any, Any]] = {
    TASK_EXECUTION_WORKFLOW: (ExecutionParams, Any),  # the task's output
    MAP_CHUNK_WORKFLOW: (MapChunk, ChunkOutcome),
    INDEX_DOC_WORKFLOW: (DocRef, IndexedDoc),
    COMPRESS_SESSION_WORKFLOW: (SessionRef, Compressed),
    RUN_TOOL_WORKFLOW: (RunToolRequest, Any),  # the tool's output
}
SIGNALS: dict[str, type] = {RESUME_SIGNAL: ResumeInput}


def tenant_priority(developer: str) -> Priority:
    """What every workflow Mint starts for a developer carries: the developer as Temporal's fairness key, so
    that a task queue's backlog is dispatched round-robin between developers instead of first come, first
    served (docs/fairness.md). Its activities and child workflows inherit it (Temporal's
    Priority docs), so only the start sets it; a server without fairness on ignores it. Keys are at most 64
    bytes: a developer's id is a UUID (36)."""
    return Priority(fairness_key=developer[:64])
