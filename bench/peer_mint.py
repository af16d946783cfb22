"""Mint in bench/peers.py: each workload as a task, run through the REST API, laid out as `mint up` lays it
out: the API in this process (a thread), the worker (`mint worker`) in a process of its own, payload
encryption on."""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from importlib.metadata import version

import httpx
from openai import AsyncOpenAI

from bench.chat_timing import chat_measures, mint_answer
from bench.model_server import TimedModelServer
from bench.peer_timing import concurrently, elapsed_s, failed_note, marginal_ms, median_ms, start_ms
from tests.stack import LocalMint, spawn_worker, stop_process

TERMINAL = ("succeeded", "failed", "cancelled")
QUEUE = "peers-mint"


def task_docs(url: str) -> dict[str, dict]:
    """Every task the bench runs, by name: chains of 1 and 100 evaluate steps, of 1 and 20 api_call steps
    (step by step, and as one run: `durability: run`), a map over 1,000 api_call items 50 at a time, and
    the three-step throughput task."""
    tool = {"name": "fetch", "type": "api_call", "api_call": {"method": "GET", "url": url}}
    call = {"tool": "fetch", "arguments": {}}
    evaluate = [{"evaluate": {"i": f"$ {i} + 1"}} for i in range(100)]
    fan_out = {"over": "$ list(range(1000))", "map": call, "parallelism": 50}
    three = [{"evaluate": {"i": "$ 1 + 1"}}, call, {"evaluate": {"status": "$ _.status_code"}}]
    docs = {
        "pure_1": evaluate[:1],
        "pure_100": evaluate,
        "http_1": [call],
        "http_20": [call] * 20,
        "fan_out": [fan_out],
        "three": three,
    }
    tasks = {name: {"name": name, "tools": [tool], "main": main} for name, main in docs.items()}
    for n in (1, 20):
        tasks[f"http_run_{n}"] = {**tasks[f"http_{n}"], "defaults": {"durability": "run"}}
    return tasks


class Mint:
    name = "Mint"

    def __init__(self, local: LocalMint, url: str):
        self.local, self.url = local, url
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        self.version = f"mint-engine {version('mint-engine')} ({commit.stdout.strip() or 'this tree'})"
        self.tasks: dict[str, str] = {}
        self.api: httpx.AsyncClient | None = None
        self.watcher = Watcher(local.pool)
        self.worker: subprocess.Popen | None = None
        self.retried = 0  # POSTs answered 429 or 503 (busy) and sent again after Retry-After
        self.model = TimedModelServer()  # the chats' provider (bench/model_server.py)
        self.direct = AsyncOpenAI(api_key="sk-bench", base_url=self.model.base_url)
        self.session = ""
        self.failures: list[str] = []  # throughput executions that failed

    @property
    def notes(self) -> tuple[str, ...]:
        return (
            "Mint: as `mint up` runs it: the API in a thread of this process, the worker (`mint worker`) in "
            "a process of its own, payloads encrypted; driven over HTTP. An execution's end is seen in the "
            "executions row GET /executions/{id} answers from, read every 2 ms (one query for all running), "
            "so that polling loads neither the API nor the worker.",
            "Mint chat: POST /sessions/{id}/chat (one agent, one user, the turn saved to the history) against "
            "a local OpenAI-compatible server in this process (bench/model_server.py), which notes when each "
            "request arrived and when its first token and last byte left; the row is the client's time "
            "minus the server's (to the first token, streamed; to the whole answer, not). The floor is the "
            "OpenAI SDK calling that server directly.",
            f"Mint: {self.retried} POSTs were answered 429/503 (busy) and sent again (same Idempotency-Key) "
            "after their Retry-After, as the julep SDK retries; the wait is in the latencies.",
            *failed_note("Mint", self.failures),
        )

    async def start(self) -> None:
        stack = await self.local.stack(
            run_worker=False,
            task_queue=QUEUE,
            openai_api_key="sk-bench",
            openai_base_url=self.model.base_url,
        )
        self.api = self.local.api(stack)
        address = self.local.env.client.service_client.config.target_host
        self.worker = spawn_worker(self.local.database_url, address, QUEUE)
        agent = (await self.api.post("/agents", json={"name": "peers", "model": "gpt-4o-mini"})).json()
        user = (await self.api.post("/users", json={"name": "Ada"})).json()
        session = await self.api.post("/sessions", json={"agent": agent["id"], "user": user["id"]})
        assert session.status_code == 201, session.text
        self.session = session.json()["id"]
        await mint_answer(self.api, self.session)  # warm: the first chat loads the tokenizer
        for name, doc in task_docs(self.url).items():
            response = await self.api.post(f"/agents/{agent['id']}/tasks", json=doc)
            assert response.status_code == 201, response.text
            self.tasks[name] = response.json()["id"]
        await self.watcher.start()

    async def close(self) -> None:
        await self.watcher.stop()
        stop_process(self.worker)
        if self.api is not None:
            await self.api.aclose()
        await self.direct.close()
        self.model.close()

    async def _post(self, task: str) -> str:
        assert self.api is not None
        key = {"Idempotency-Key": str(uuid.uuid4())}  # a retry returns the execution the first try created
        while True:
            response = await self.api.post(
                f"/tasks/{self.tasks[task]}/executions", json={"input": {}}, headers=key
            )
            if response.status_code not in (429, 503):
                break
            self.retried += 1
            await asyncio.sleep(float(response.headers.get("Retry-After", 1)))
        assert response.status_code == 201, response.text
        return response.json()["id"]

    async def _execute(self, task: str) -> None:
        await self.watcher.wait(await self._post(task))

    def measures(self) -> dict:
        return {
            "pure": lambda: marginal_ms(lambda n: self._execute(f"pure_{n}"), 100),
            "http": lambda: marginal_ms(lambda n: self._execute(f"http_{n}"), 20),
            "http_run": lambda: marginal_ms(lambda n: self._execute(f"http_run_{n}"), 20),
            "fan_out": lambda: elapsed_s(lambda: self._execute("fan_out")),
            "start": lambda: start_ms(lambda: self._post("pure_1"), self.watcher.wait),
            "one_step": lambda: median_ms(lambda: self._execute("pure_1")),
            "throughput": lambda: concurrently(lambda: self._execute("three"), 200, self.failures),
            "chat": self._chat,
        }

    async def _chat(self) -> dict[str, float]:
        assert self.api is not None
        return await chat_measures(self.model, self.api, self.session, self.direct)


class Watcher:
    """Sees executions end by reading their rows every 2 ms, all in one query."""

    def __init__(self, pool) -> None:
        self.pool = pool
        self.waiting: dict[str, asyncio.Future[str]] = {}
        self._task: asyncio.Task | None = None
        # Set while something is waited for: an idle watcher sleeps, so that the chat rows, which wait for
        # no execution, do not share this process's interpreter with a poll every 2 ms.
        self._wanted = asyncio.Event()

    async def start(self) -> None:
        self._task = asyncio.create_task(self._watch())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def wait(self, execution_id: str) -> None:
        self.waiting[execution_id] = asyncio.get_running_loop().create_future()
        self._wanted.set()
        try:
            status = await self.waiting[execution_id]
        finally:
            del self.waiting[execution_id]
        if status != "succeeded":
            raise RuntimeError(f"execution {execution_id} {status}")

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(0.002)
            if not self.waiting:
                self._wanted.clear()
                await self._wanted.wait()
                continue
            rows = await self.pool.fetch(
                "SELECT id::text, status, error FROM executions WHERE id = ANY($1::uuid[]) AND status = ANY($2)",
                list(self.waiting),
                list(TERMINAL),
            )
            for row in rows:
                if (done := self.waiting.get(row["id"])) is not None and not done.done():
                    done.set_result(
                        row["status"] if row["status"] == "succeeded" else f"{row['status']}: {row['error']}"
                    )
