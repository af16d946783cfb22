"""A worker killed mid-write or mid-call costs an execution seconds, not the longest timeout in its path.

Each test gets an execution to a known point on one worker, starts a second worker and waits until it polls
(as in a deployment, where the others are already running), SIGKILLs the first, and measures the gap between
the kill and the execution's next transition row. The bound is the sum of the configured timeouts Temporal must wait out
to notice the loss (contracts/liveness.py) plus the retry interval, plus slack for the new worker to replay:
the gaps are printed (`pytest -s`)."""

import asyncio
import signal
import threading
import time

import asyncpg
import httpx
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

from contracts.liveness import HEARTBEAT_TIMEOUT, STICKY_TIMEOUT, WORKFLOW_TASK_TIMEOUT, WRITE_TIMEOUT
from tests.helpers import create_agent, create_task, start, transitions
from tests.local_http import LocalServer, Request, ok
from tests.test_crash import Crashable, _finished_once
from workflows.calls import DEFAULT_RETRY
from workflows.transition_log import WRITE_RETRY

# For the new worker to start polling, replay the history and write: generous on a loaded 2-core machine.
SLACK_SECONDS = 4.0
# An api_call whose timeout is over a minute runs as a regular activity (workflows/calls.py), which heartbeats.
QUEUED = 120


class Gate:
    """An HTTP handler that holds each request until the test opens the gate (or `hold` seconds pass)."""

    def __init__(self, hold: float = 60.0):
        self.open = threading.Event()
        self.hold = hold

    def __call__(self, request: Request):
        self.open.wait(self.hold)
        return ok(request)


async def _start(api: httpx.AsyncClient, url: str, steps: int, timeout: float | None) -> dict:
    api_call = {"url": url, **({"timeout": timeout} if timeout else {})}
    tool = {"name": "call", "type": "api_call", "api_call": api_call}
    main = [{"tool": "call", "arguments": {}} for _ in range(steps)]
    task = await create_task(
        api, (await create_agent(api))["id"], {"name": "calls", "tools": [tool], "main": main}
    )
    return await start(api, task["id"])


async def _until(condition, within: float = 60.0) -> None:
    deadline = time.monotonic() + within
    while not await condition():
        assert time.monotonic() < deadline, "timed out waiting for the execution to get there"
        await asyncio.sleep(0.05)


async def _gap_to_next_transition(
    api: httpx.AsyncClient, execution_id: str, seen: int, killed: float
) -> float:
    """Seconds from `killed` until the execution has more than `seen` transitions."""
    while len(await transitions(api, execution_id)) <= seen:
        assert time.monotonic() - killed < 120, "no transition two minutes after the kill"
        await asyncio.sleep(0.05)
    return time.monotonic() - killed


async def test_a_write_lost_with_its_worker_is_retried_within_seconds(postgres_url, temporal_env, api_key):
    """A transition write running in the background (beside a queued call) when its worker dies: held up in
    Postgres by a row lock the test takes, so the kill lands mid-write."""
    crash, gate = Crashable(postgres_url, temporal_env, api_key), Gate()
    with LocalServer(gate) as server:
        async with crash.running() as api:
            execution = await _start(api, server.url, 2, QUEUED)
            eid = execution["id"]
            await _until(lambda: _count(api, eid, 1))  # init written; the first call is in flight
            db = await asyncpg.connect(postgres_url)
            try:
                lock = db.transaction()
                await lock.start()
                await db.execute("SELECT 1 FROM executions WHERE id = $1 FOR UPDATE", eid)
                gate.open.set()  # the first call answers; its step's write waits for the lock
                await _until(lambda: _write_waiting(db))
                killed = await _fail_over(crash, temporal_env.client)
                await lock.rollback()  # the dead worker's write never committed: the retry must write it
            finally:
                await db.close()
            gap = await _gap_to_next_transition(api, eid, 1, killed)
            bound = HEARTBEAT_TIMEOUT.total_seconds() + WRITE_RETRY.initial_interval.total_seconds()
            print(f"\nkill mid-write -> next transition: {gap:.1f} s (bound {bound + SLACK_SECONDS:.1f} s)")
            assert gap < bound + SLACK_SECONDS
            assert gap < WRITE_TIMEOUT.total_seconds() < 30  # the old wait: a whole 30 s attempt
            await _finished_once(api, eid, 2)


async def test_a_queued_call_lost_with_its_worker_is_retried_within_seconds(
    postgres_url, temporal_env, api_key
):
    """A call running as a regular activity when its worker dies: its heartbeat stops."""
    crash, gate = Crashable(postgres_url, temporal_env, api_key), Gate()
    with LocalServer(gate) as server:
        async with crash.running() as api:
            execution = await _start(api, server.url, 2, QUEUED)
            eid = execution["id"]
            await _until(lambda: _count(api, eid, 1))
            await _until(lambda: _true(len(server.requests) >= 1))
            killed = await _fail_over(crash, temporal_env.client)
            gate.open.set()
            gap = await _gap_to_next_transition(api, eid, 1, killed)
            # Noticed by its heartbeat; retried after the step's first retry interval; the workflow's next
            # task waits for the dead worker's sticky queue to give it up.
            bound = (
                HEARTBEAT_TIMEOUT.total_seconds()
                + DEFAULT_RETRY.initial_interval
                + STICKY_TIMEOUT.total_seconds()
            )
            print(f"\nkill mid-call -> next transition: {gap:.1f} s (bound {bound + SLACK_SECONDS:.1f} s)")
            assert gap < bound + SLACK_SECONDS
            await _finished_once(api, eid, 2)
            keys = [r.headers["Idempotency-Key"] for r in server.requests]
            assert len(set(keys)) == 2 and len(keys) <= 3


async def _fail_over(crash: Crashable, client: Client) -> float:
    """Start a second worker, wait until it polls the queue for both workflow and activity tasks, then SIGKILL
    the first; the time of the kill."""
    first = crash.workers[-1]
    crash.spawn_worker()
    pid = crash.workers[-1].pid
    await _until(lambda: _polls(client, crash.queue, pid), within=120)
    first.send_signal(signal.SIGKILL)
    first.wait()
    return time.monotonic()


async def _polls(client: Client, queue: str, pid: int) -> bool:
    """Worker process `pid` polls `queue` for workflow and activity tasks (its identity is `pid@host`)."""
    for kind in (TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY):
        described = await client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=client.namespace, task_queue=TaskQueue(name=queue), task_queue_type=kind
            )
        )
        if not any(poller.identity.startswith(f"{pid}@") for poller in described.pollers):
            return False
    return True


async def _count(api: httpx.AsyncClient, execution_id: str, at_least: int) -> bool:
    return len(await transitions(api, execution_id)) >= at_least


async def _true(value: bool) -> bool:
    return value


async def _write_waiting(db: asyncpg.Connection) -> bool:
    """A transition write is waiting for the test's row lock (the only lock the test holds)."""
    return bool(
        await db.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))"
        )
    )


async def test_a_call_in_the_worker_lost_with_it_is_retried_within_seconds(
    postgres_url, temporal_env, api_key
):
    """A call running in the workflow's own worker (a local activity) when the worker dies: the workflow
    task it runs in times out, and the new worker runs the call again."""
    crash, gate = Crashable(postgres_url, temporal_env, api_key), Gate()
    with LocalServer(gate) as server:
        async with crash.running() as api:
            execution = await _start(api, server.url, 2, None)
            eid = execution["id"]
            await _until(lambda: _true(len(server.requests) >= 1))
            seen = len(await transitions(api, eid))
            killed = await _fail_over(crash, temporal_env.client)
            gate.open.set()
            gap = await _gap_to_next_transition(api, eid, seen, killed)
            bound = WORKFLOW_TASK_TIMEOUT.total_seconds()
            print(
                f"\nkill mid-call in the worker -> next transition: {gap:.1f} s (bound {bound + SLACK_SECONDS:.1f} s)"
            )
            assert gap < bound + SLACK_SECONDS
            await _finished_once(api, eid, 2)
            keys = [r.headers["Idempotency-Key"] for r in server.requests]
            assert len(set(keys)) == 2 and len(keys) <= 3
