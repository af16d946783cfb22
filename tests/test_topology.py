"""The production topology, tested: 2 `mint api` and 3 `mint worker` processes on a Postgres and a Temporal
server of their own run a mixed task 500 times while workers are SIGKILLed and replaced every few seconds and
an API is SIGKILLed and restarted beside them (several times over the run).

Every execution must end `succeeded` with the right output, write each transition once (seq unique and
contiguous), and apply each of its calls' side effects once per idempotency key (the test's HTTP server
applies a key once and answers repeats as the first time, as a deduplicating server does). For each worker kill, the gap
between the kill and the next transition of every execution running at that moment (the ones that may have
had work in flight on it) is measured and printed, and must stay under what contracts/liveness.py's
timeouts allow (as tests/test_recovery.py bounds it).

`pytest -m topology tests/test_topology.py -s` runs it alone and prints the figures (and, for any gap over
the three longest gaps, the execution's Temporal events from the kill on); MINT_TOPOLOGY_EXECUTIONS and
MINT_TOPOLOGY_WINDOW change the number of executions and how many are in flight at once."""

from __future__ import annotations

import asyncio
import json
import os
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from contracts.liveness import HEARTBEAT_TIMEOUT, STICKY_TIMEOUT, WORKFLOW_TASK_TIMEOUT
from tests.conftest import temporal_address
from tests.helpers import TERMINAL
from tests.local_http import LocalServer, Request
from tests.topology import Apis, Cluster
from workflows.calls import DEFAULT_RETRY
from workflows.transition_log import WRITE_RETRY

pytestmark = pytest.mark.topology

EXECUTIONS = int(os.environ.get("MINT_TOPOLOGY_EXECUTIONS", "500"))
# Executions in flight at once: a steady load, so that an execution's next transition waits on the kill and
# not on a backlog of hundreds queued behind it on 2 cores.
WINDOW = int(os.environ.get("MINT_TOPOLOGY_WINDOW", "20"))
SEED = int(os.environ.get("MINT_TOPOLOGY_SEED", "19"))
KILL_EVERY = (3.0, 6.0)  # seconds between worker kills, drawn from the seeded generator
API_KILL_AT = 2  # an API is killed with this worker kill (the first) ...
API_KILL_EVERY = 10  # ... and every so many after it, once the last one it killed serves again
MAP_ITEMS = 50
STATUS_EVERY = 10.0  # seconds between the lines of counts the watcher prints (`pytest -s`)
# No execution ending for this long is a stall (an execution waits forever): the test fails naming them.
STALL_SECONDS = 90.0
# The longest path Temporal waits out to notice a lost worker (tests/test_recovery.py: a queued call's
# heartbeat, its retry interval, then the dead worker's sticky queue; a write's heartbeat and retry; a
# workflow task), plus the slack test_recovery gives a new worker to replay, doubled: here the workers replay
# up to WINDOW executions at once and start up again beside the other processes on 2 shared cores.
SLACK_SECONDS = 8.0
GAP_BOUND = (
    max(
        HEARTBEAT_TIMEOUT.total_seconds()
        + (DEFAULT_RETRY.initial_interval or 0.0)
        + STICKY_TIMEOUT.total_seconds(),
        HEARTBEAT_TIMEOUT.total_seconds() + WRITE_RETRY.initial_interval.total_seconds(),
        WORKFLOW_TASK_TIMEOUT.total_seconds(),
    )
    + SLACK_SECONDS
)

# Its first three steps (an evaluate and two calls) say `durability: run`: they run as one run of steps
# (workflows/step_runs.py), which the kills must not make lose or repeat anything either.
TASK = {
    "name": "mixed",
    "tools": [{"name": "effect", "type": "api_call", "api_call": {"method": "POST", "url": "URL"}}],
    "main": [
        {"evaluate": {"n": "$ _['n']"}, "durability": "run"},
        {"tool": "effect", "arguments": {"json": {"n": "$ _['n']"}}, "durability": "run"},
        {
            "tool": "effect",
            "arguments": {"json": {"n": f"$ _['json']['echo'] + {EXECUTIONS}"}},
            "durability": "run",
        },
        {
            "over": f"$ list(range({MAP_ITEMS}))",
            "map": {"evaluate": {"v": "$ _ * 2"}},
            "reduce": "$ results + _['v']",
            "initial": 0,
        },
        {"sleep": {"seconds": 1}},
        {"wait_for_input": {"info": {"question": "$ 'three times n?'"}}},
        {
            "evaluate": {
                "n": "$ steps[0].output['n']",
                "echo": "$ steps[1].output['json']['echo']",
                "again": f"$ steps[2].output['json']['echo'] - {EXECUTIONS}",
                "total": "$ steps[3].output",
                "answer": "$ _['answer']",
            }
        },
    ],
}


def _expected(n: int) -> dict:
    return {"n": n, "echo": n, "again": n, "total": sum(2 * i for i in range(MAP_ITEMS)), "answer": 3 * n}


class Effects:
    """The api_call's server: applies each Idempotency-Key's effect once and answers a repeat as the first."""

    def __init__(self) -> None:
        self.applied: dict[str, int] = {}  # key -> the n it was applied with
        self.requests = 0
        self.unkeyed = 0
        self._lock = threading.Lock()

    def __call__(self, request: Request):
        n = json.loads(request.body)["n"]
        key = request.headers.get("Idempotency-Key")
        with self._lock:
            self.requests += 1
            if key is None:
                self.unkeyed += 1
            else:
                self.applied.setdefault(key, n)
        body = json.dumps({"echo": self.applied.get(key or "", n)}).encode()
        return 200, {"Content-Type": "application/json"}, body


@dataclass
class Kill:
    at: float
    seen: dict[str, int]  # the executions running at the kill -> their last seq then
    gaps: dict[str, float] = field(default_factory=dict)  # -> seconds from the kill to their next transition
    wall: datetime = field(default_factory=lambda: datetime.now(UTC))  # to find the kill in a history


class Progress:
    """Watches every started execution in Postgres, answers its wait through an API, and times kills."""

    def __init__(self, db: asyncpg.Pool, apis: Apis):
        self.db, self.apis = db, apis
        self.answers: dict[str, int] = {}  # execution -> its n
        self.finished: dict[str, asyncio.Event] = {}
        self.kills: list[Kill] = []
        self.api_kills = 0
        # Answers an API refused (printed: a duplicate after a lost reply may be).
        self.refused: list[str] = []
        self._answering: dict[str, asyncio.Task] = {}
        self._answered: set[str] = set()

    def track(self, execution_id: str, n: int) -> asyncio.Event:
        self.answers[execution_id] = n
        return self.finished.setdefault(execution_id, asyncio.Event())

    async def _rows(self, statuses: tuple[str, ...] | None = None) -> list[asyncpg.Record]:
        ids = [i for i, done in self.finished.items() if not done.is_set()]
        return await self.db.fetch(
            "SELECT id::text, status, last_seq FROM executions WHERE id = ANY($1::uuid[])"
            " AND ($2::text[] IS NULL OR status = ANY($2::text[]))",
            ids,
            statuses,
        )

    async def running_now(self) -> dict[str, int]:
        return {r["id"]: r["last_seq"] for r in await self._rows(("starting", "running"))}

    async def watch(self) -> None:
        """Until cancelled: time each kill's gaps, answer waits, mark executions ended; print a line of
        counts every few seconds; fail naming the unfinished executions if none ends for STALL_SECONDS."""
        last_end, shown = time.monotonic(), 0.0
        while True:
            rows = await self._rows()
            now = time.monotonic()
            for row in rows:
                eid = row["id"]
                for kill in self.kills:
                    if eid in kill.seen and eid not in kill.gaps and row["last_seq"] > kill.seen[eid]:
                        kill.gaps[eid] = now - kill.at
                if row["status"] == "awaiting_input" and eid not in self._answered | self._answering.keys():
                    self._answering[eid] = asyncio.create_task(self._answer(eid))
                if row["status"] in TERMINAL:
                    self.finished[eid].set()
                    last_end = now
            if now - shown > STATUS_EVERY:
                shown = now
                counts = Counter(row["status"] for row in rows)
                print(f"  {len(self.answers)} started, {len(self.kills)} kills, unfinished: {dict(counts)}")
            if rows and now - last_end > STALL_SECONDS:
                await self._stalled(rows)
            await asyncio.sleep(0.1)

    async def _stalled(self, rows: list[asyncpg.Record]) -> None:
        """Fail with each unfinished execution's status and last transitions (what a stall needs read)."""
        lines = []
        for row in rows:
            last = await self.db.fetch(
                "SELECT seq, type, created_at FROM transitions WHERE execution_id = $1::uuid"
                " ORDER BY seq DESC LIMIT 3",
                row["id"],
            )
            seen = ", ".join(f"{t['seq']} {t['type']} at {t['created_at']:%H:%M:%S.%f}" for t in last)
            answered = "answered" if row["id"] in self._answered else "not answered"
            lines.append(f"{row['id']} {row['status']} ({answered}): {seen}")
        raise AssertionError(f"no execution ended for {STALL_SECONDS} s:\n" + "\n".join(lines))

    async def _answer(self, eid: str) -> None:
        body = {"status": "running", "input": {"answer": 3 * self.answers[eid]}}
        try:
            response = await self.apis.request("PUT", f"/executions/{eid}", json=body)
            if response.status_code == 200:
                self._answered.add(eid)
            else:  # asked again at the next look while it still waits
                self.refused.append(f"{eid}: {response.status_code} {response.text}")
        finally:
            del self._answering[eid]


async def _chaos(cluster: Cluster, apis: Apis, progress: Progress, stop: asyncio.Event) -> None:
    """Until `stop`: SIGKILL a worker picked at random and start another, every few seconds; with the
    API_KILL_AT-th and every API_KILL_EVERY-th after it, SIGKILL an API too and restart it (beside the worker
    kills, which go on meanwhile)."""
    rng = random.Random(SEED)
    api_restart: asyncio.Task | None = None
    while True:
        try:
            await asyncio.wait_for(stop.wait(), rng.uniform(*KILL_EVERY))
            break
        except TimeoutError:
            pass
        running = await progress.running_now()
        at = cluster.kill_worker(rng.randrange(len(cluster.workers)))
        progress.kills.append(Kill(at, running))
        due = len(progress.kills) >= API_KILL_AT and (len(progress.kills) - API_KILL_AT) % API_KILL_EVERY == 0
        if due and (api_restart is None or api_restart.done()):
            if api_restart is not None:
                api_restart.result()  # the last restart failed: raise that
            progress.api_kills += 1
            api_restart = asyncio.create_task(_restart_api(cluster, apis, rng.randrange(len(cluster.apis))))
    if api_restart is not None:
        await api_restart


async def _restart_api(cluster: Cluster, apis: Apis, index: int) -> None:
    """SIGKILL API `index` (its requests in flight go again to the other), restart it, use it again."""
    apis.take_down(index)
    cluster.kill_api(index)
    began = time.monotonic()
    await cluster.healthy(index)
    await apis.bring_up(index)
    print(f"  API {index} killed, serving again after {time.monotonic() - began:.1f} s")


async def _run_all(apis: Apis, progress: Progress, task_id: str) -> None:
    window = asyncio.Semaphore(WINDOW)

    async def one(n: int) -> None:
        async with window:
            # Starts alternate between the APIs (the watcher's answers take turns too); a start whose API
            # dies under it is sent again to the other with the same key.
            response = await apis.request(
                "POST",
                f"/tasks/{task_id}/executions",
                via=n % len(apis.clients),
                json={"input": {"n": n}},
                headers={"Idempotency-Key": f"topology-{n}"},
            )
            assert response.status_code in (200, 201), response.text
            execution = response.json()
            await progress.track(execution["id"], n).wait()

    await asyncio.gather(*(one(n) for n in range(EXECUTIONS)))


async def _check_transitions(db: asyncpg.Pool, ids: list[str]) -> None:
    """Each execution's seqs are 1..transition_count with no gap or repeat, and every execution wrote the same
    kinds of transitions in the same order (a step written twice would add one)."""
    rows = await db.fetch(
        "SELECT e.id::text, e.transition_count, array_agg(t.seq ORDER BY t.seq) AS seqs,"
        " array_agg(t.type ORDER BY t.seq) AS kinds"
        " FROM executions e JOIN transitions t ON t.execution_id = e.id"
        " WHERE e.id = ANY($1::uuid[]) GROUP BY e.id",
        ids,
    )
    assert len(rows) == len(ids)
    first = list(rows[0]["kinds"])
    assert first[0] == "init" and first[-1] == "finish", first
    assert first.count("wait") == first.count("resume") == 1, first
    assert first.count("step") >= MAP_ITEMS, first
    for row in rows:
        assert list(row["seqs"]) == list(range(1, row["transition_count"] + 1)), row
        assert list(row["kinds"]) == first, row


async def test_two_apis_and_three_workers_survive_kills(postgres_url, temporal_env, api_key, tmp_path):
    cluster = Cluster(postgres_url, temporal_address(temporal_env), tmp_path)
    apis, effects = Apis(cluster, api_key), Effects()
    db = await asyncpg.create_pool(postgres_url, min_size=1, max_size=2)
    progress, stop = Progress(db, apis), asyncio.Event()
    tasks: list[asyncio.Task] = []
    try:
        began = time.monotonic()
        await cluster.start()
        print(f"\n2 APIs serving after {time.monotonic() - began:.1f} s")
        with LocalServer(effects) as server:
            task_doc = json.loads(json.dumps(TASK).replace('"URL"', json.dumps(server.url)))
            agent = (await apis.request("POST", "/agents", json={"name": "topology"})).json()
            task = (await apis.request("POST", f"/agents/{agent['id']}/tasks", json=task_doc)).json()
            began = time.monotonic()
            run = asyncio.create_task(_run_all(apis, progress, task["id"]))
            watcher = asyncio.create_task(progress.watch())
            chaos = asyncio.create_task(_chaos(cluster, apis, progress, stop))
            tasks = [run, watcher, chaos]
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            duration = time.monotonic() - began
            stop.set()
            for finished in done:
                finished.result()  # the run ended, or the watcher or the chaos failed: raise that
            await chaos
        _print_figures(progress, duration, effects, apis)
        await _print_slow_histories(temporal_env.client, progress.kills, cluster.spawned)
        checks_began = time.monotonic()
        await _check_outputs(apis, progress)
        await _check_transitions(db, list(progress.answers))
        started = await db.fetchval("SELECT count(*) FROM executions WHERE task_id = $1", task["id"])
        assert started == EXECUTIONS  # a start sent again after its API died made no second execution
        assert effects.unkeyed == 0
        # Each execution's two calls, once each (the second applies n + EXECUTIONS).
        assert sorted(effects.applied.values()) == list(range(2 * EXECUTIONS))
        print(f"checked in {time.monotonic() - checks_began:.1f} s")
        _check_gaps(progress.kills)
    finally:
        for running in tasks:
            running.cancel()
        cluster.close()
        await apis.close()
        await db.close()


async def _check_outputs(apis: Apis, progress: Progress) -> None:
    for eid, n in progress.answers.items():
        done = (await apis.request("GET", f"/executions/{eid}")).json()
        assert done["status"] == "succeeded", done
        assert done["output"] == _expected(n), done


def _print_figures(progress: Progress, duration: float, effects: Effects, apis: Apis) -> None:
    """The figures docs/operations.md quotes (`pytest -s`)."""
    kills = progress.kills
    gaps = [gap for kill in kills for gap in kill.gaps.values()]
    print(
        f"\ntopology: {EXECUTIONS} executions ({WINDOW} at once) in {duration:.0f} s; requests answered by"
        f" each API {apis.sent_through}, {apis.retried} sent again; {len(kills)} worker kills and"
        f" {progress.api_kills} API kills; {effects.requests} calls for {len(effects.applied)} idempotency keys;"
        f" {len(progress.refused)} answers refused; kill -> next transition of the {len(gaps)} executions"
        f" running at a kill: max {max(gaps, default=0):.1f} s, mean {sum(gaps) / max(len(gaps), 1):.1f} s"
        f" (bound {GAP_BOUND:.1f} s)"
    )
    for refused in progress.refused:
        print(f"  answer refused: {refused}")
    for number, kill in enumerate(kills, 1):
        worst = max(kill.gaps.values(), default=0.0)
        print(f"  kill {number}: {len(kill.seen)} running, next transition within {worst:.1f} s")


async def _print_slow_histories(
    client: Client, kills: list[Kill], spawned: dict[int, float], worst: int = 3
) -> None:
    """For the `worst` gaps, what Temporal recorded for that execution from the kill on: where a slow
    recovery spent its time (event types and times; the payloads are sealed)."""
    gaps = sorted(((gap, number, eid) for number, k in enumerate(kills, 1) for eid, gap in k.gaps.items()))
    for gap, number, eid in reversed(gaps[-worst:]):
        kill = kills[number - 1]
        print(f"  kill {number} -> {eid}: {gap:.1f} s; its history from the kill:")
        history = await client.get_workflow_handle(eid).fetch_history()
        for event in history.events:
            at = event.event_time.ToDatetime(tzinfo=UTC)
            if kill.wall <= at <= kill.wall + timedelta(seconds=gap + 1):
                kind = EventType.Name(event.event_type).removeprefix("EVENT_TYPE_")
                print(
                    f"    +{(at - kill.wall).total_seconds():5.1f} s {kind}{_picked_by(event, kill, spawned)}"
                )


def _picked_by(event, kill: Kill, spawned: dict[int, float]) -> str:
    """For a workflow task's start: the worker that took it, and when that worker was started relative
    to the kill (a worker started after it is the killed one's replacement)."""
    if event.event_type != EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
        return ""
    identity = event.workflow_task_started_event_attributes.identity
    pid = int(identity.partition("@")[0]) if identity.partition("@")[0].isdigit() else None
    if pid not in spawned:
        return f" by {identity}"
    return f" by worker {pid}, started at {spawned[pid] - kill.at:+.1f} s"


def _check_gaps(kills: list[Kill]) -> None:
    assert len(kills) >= API_KILL_AT, "the run ended before the API was killed: raise EXECUTIONS"
    unmeasured = [eid for kill in kills for eid in kill.seen if eid not in kill.gaps]
    assert not unmeasured, f"executions running at a kill never wrote another transition: {unmeasured}"
    assert max((gap for kill in kills for gap in kill.gaps.values()), default=0.0) < GAP_BOUND
