"""LangGraph in bench/peers.py: the workloads as StateGraphs compiled with the Postgres checkpointer
(AsyncPostgresSaver, its tables in a database of their own on the bench's Postgres), a new thread per run."""

from __future__ import annotations

import operator
import uuid
from contextlib import AsyncExitStack
from importlib.metadata import version
from typing import Annotated, Any, TypedDict

import httpx
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

from bench.peer_timing import elapsed_s, marginal_ms, median_ms

# What `ainvoke` does when it is given no `durability` (langgraph/pregel/main.py): the checkpoint of each
# step is written while the next step runs; "sync" writes it before the next step starts.
DEFAULT_DURABILITY = "async"


class State(TypedDict, total=False):
    value: int
    items: int
    results: Annotated[list[int], operator.add]


class LangGraph:
    name = "LangGraph"
    notes = (
        f"LangGraph: ainvoke with AsyncPostgresSaver; its default durability is '{DEFAULT_DURABILITY}' (a "
        "step's checkpoint is written while the next step runs); 'sync' writes it first. It has no "
        "separate start call.",
    )

    def __init__(self, database_url: str, url: str):
        self.database_url, self.url = database_url, url
        self.version = (
            f"langgraph {version('langgraph')}, "
            f"langgraph-checkpoint-postgres {version('langgraph-checkpoint-postgres')}"
        )
        self._stack = AsyncExitStack()
        self.graphs: dict[str, Any] = {}

    async def start(self) -> None:
        saver = await self._stack.enter_async_context(AsyncPostgresSaver.from_conn_string(self.database_url))
        await saver.setup()
        http = await self._stack.enter_async_context(httpx.AsyncClient())

        async def add_one(state: State) -> State:
            return {"value": state["value"] + 1}

        async def fetch(state: State) -> State:
            return {"value": (await http.get(self.url)).status_code}

        async def call(_: dict) -> State:
            return {"results": [(await http.get(self.url)).status_code]}

        for n in (1, 100):
            self.graphs[f"pure_{n}"] = _chain(add_one, n).compile(checkpointer=saver)
        for n in (1, 20):
            self.graphs[f"http_{n}"] = _chain(fetch, n).compile(checkpointer=saver)
        self.graphs["fan_out"] = _fan_out(call).compile(checkpointer=saver)

    async def close(self) -> None:
        await self._stack.aclose()

    async def _invoke(self, graph: str, state: State, **options: Any) -> None:
        config = {"configurable": {"thread_id": str(uuid.uuid4())}, "recursion_limit": 1000}
        await self.graphs[graph].ainvoke(state, {**config, **options.pop("config", {})}, **options)

    def measures(self) -> dict:
        def chain(kind: str, **options: Any):
            return lambda n: self._invoke(f"{kind}_{n}", {"value": 0}, **options)

        fan_out = {"items": 1000, "results": []}
        return {
            "pure": lambda: marginal_ms(chain("pure"), 100),
            "pure_sync": lambda: marginal_ms(chain("pure", durability="sync"), 100),
            "http": lambda: marginal_ms(chain("http"), 20),
            "http_sync": lambda: marginal_ms(chain("http", durability="sync"), 20),
            "fan_out": lambda: elapsed_s(
                lambda: self._invoke("fan_out", fan_out, config={"max_concurrency": 50})
            ),
            "one_step": lambda: median_ms(lambda: chain("pure")(1)),
        }


def _chain(node: Any, steps: int) -> StateGraph:
    builder = StateGraph(State)
    builder.add_sequence([(f"step_{i}", node) for i in range(steps)])
    builder.add_edge(START, "step_0")
    builder.add_edge(f"step_{steps - 1}", END)
    return builder


def _fan_out(call: Any) -> StateGraph:
    """One `Send` per item to the `call` node; their results are appended to `results`."""

    def fan(state: State) -> list[Send]:
        return [Send("call", {"i": i}) for i in range(state["items"])]

    builder = StateGraph(State)
    builder.add_node("call", call)
    builder.add_conditional_edges(START, fan, ["call"])
    builder.add_edge("call", END)
    return builder
