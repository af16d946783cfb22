"""bench/peers.py's table: which peer each ratio is over, and how failures show (made-up numbers: no
timing is asserted here, and none of the peers needs to be installed); and its chat row measured once for
real, against a Mint stack and the bench's local model server."""

from __future__ import annotations

import uuid

import httpx
from openai import AsyncOpenAI

from bench import chat_timing
from bench.model_server import TimedModelServer
from bench.peers import (
    LANGGRAPH,
    MINT,
    RAW,
    SYSTEMS,
    WORKLOADS,
    Run,
    Shown,
    Workload,
    format_table,
    gap,
    ratio,
)
from tests.conftest import temporal_address

PURE = Workload(
    "pure step",
    {
        MINT: (Shown("pure", "evaluate"),),
        RAW: (Shown("pure", "in workflow", floor=True), Shown("pure_local", "local activity")),
        "DBOS": (Shown("pure", "step"),),
        LANGGRAPH: (Shown("pure", "async"), Shown("pure_sync", "sync")),
    },
)
THROUGHPUT = Workload(
    "throughput",
    {MINT: (Shown("throughput"),), RAW: (Shown("throughput"),)},
    higher_is_better=True,
    versus=RAW,
)


def test_the_ratio_is_over_the_best_peer_number_and_names_it() -> None:
    results = {
        MINT: {"pure": 0.5},
        RAW: {"pure": 0.01, "pure_local": 2.0},
        "DBOS": {"pure": 4.0},
        LANGGRAPH: {"pure": 2.5, "pure_sync": 1.0},
    }
    # raw Temporal's in-workflow step is a floor, shown but left out; LangGraph's sync variant is the best.
    assert ratio(results, PURE) == "0.500x (LangGraph sync)"


def test_a_ratio_over_a_named_peer_where_higher_is_better() -> None:
    results = {MINT: {"throughput": 30.0}, RAW: {"throughput": 120.0}, "DBOS": {"throughput": 500.0}}
    assert ratio(results, THROUGHPUT) == "0.250x (raw Temporal)"


def test_ratios_are_rounded_by_size_and_a_best_peer_at_or_below_zero_gives_none() -> None:
    assert (
        ratio({MINT: {"pure": 25.0}, RAW: {"pure_local": 0.2}}, PURE) == "125x (raw Temporal local activity)"
    )
    assert (
        ratio({MINT: {"pure": 1.5}, RAW: {"pure_local": 0.1}}, PURE) == "15.0x (raw Temporal local activity)"
    )
    assert ratio({MINT: {"pure": 0.03}, "DBOS": {"pure": 9.0}}, PURE) == "0.003x (DBOS step)"
    assert ratio({MINT: {"pure": 1.0}, "DBOS": {"pure": -0.2}}, PURE).startswith("- ")
    assert ratio({MINT: {"pure": 1.0}}, PURE) == "-"


def test_the_table_has_a_row_per_workload_and_a_column_per_system() -> None:
    results = {
        MINT: {"pure": 0.2, "throughput": 40.0, "p95": 900.0},
        RAW: {"pure": 0.004, "pure_local": 2.3, "throughput": 80.0, "p95": 300.0},
    }
    lines = format_table(results).splitlines()
    assert lines[0] == "| workload | Mint | raw Temporal | DBOS | LangGraph | Mint / best peer |"
    assert len(lines) == 2 + len(WORKLOADS)
    assert all(line.count("|") == len(SYSTEMS) + 3 for line in lines)
    pure = lines[2].split(" | ")
    assert pure[1:3] == ["0.200 (evaluate)", "0.004 (in workflow); 2.30 (local activity)"]
    assert pure[-1] == "0.087x (raw Temporal local activity) |"  # 0.2 / 2.3
    p95 = lines[-1].split(" | ")
    assert p95[1:3] == ["900", "300"] and p95[-1] == "3.00x (raw Temporal) |"


def test_a_peer_that_did_not_run_says_why_once_and_a_failed_measure_says_failed() -> None:
    results = {
        MINT: {"pure": 0.2, "http": "TimeoutError: no answer"},
        "DBOS": "dbos is not installed (pip install -e '.[bench]')",
    }
    rows = [line.split(" | ") for line in format_table(results).splitlines()[2:]]
    dbos = SYSTEMS.index("DBOS") + 1
    assert rows[0][dbos] == "not run: dbos is not installed (pip install -e '.[bench]')"
    assert {row[dbos] for row in rows[1:]} == {"-"}
    assert rows[1][1] == "failed (api_call)"


def test_each_number_is_the_median_of_its_rounds_and_a_measure_that_always_failed_keeps_its_error() -> None:
    run = Run(failed={LANGGRAPH: "failed to start: OSError"})
    run.rounds[MINT] = {"pure": [0.3, "ValueError: once", 0.1, 0.2], "http": ["KeyError: 'x'"]}
    assert run.results() == {
        LANGGRAPH: "failed to start: OSError",
        MINT: {"pure": 0.2, "http": "KeyError: 'x'"},
    }


def _row(title_start: str) -> Workload:
    return next(w for w in WORKLOADS if w.title.startswith(title_start))


def test_start_rows_say_the_ms_over_raw_temporal_beside_the_ratio_to_the_best_peer() -> None:
    results = {
        MINT: {"start": 12.3, "start_p90": 35.0},
        RAW: {"start": 4.8, "start_p90": 9.0},
        "DBOS": {"start": 1.9, "start_p90": 2.5},
    }
    median, p90 = _row("start call answers, median"), _row("start call answers, p90")
    assert gap(results, median) == "+7.50 ms over raw Temporal start_workflow"
    rows = {line.split(" | ")[0]: line for line in format_table(results).splitlines()}
    assert rows[f"| {median.title}"].endswith(
        "| 6.47x (DBOS start_workflow_async); +7.50 ms over raw Temporal start_workflow |"
    )
    assert rows[f"| {p90.title}"].endswith("; +26.0 ms over raw Temporal start_workflow |")


def test_chat_rows_show_mint_beside_the_sdk_floor_and_the_ms_between_them() -> None:
    results = {MINT: {"chat_first_token": 3.5, "chat_first_token_floor": 1.25, "chat_answer": 0.5}}
    first_token, answer = _row("streamed chat"), _row("chat answer")
    rows = {line.split(" | ")[0]: line.split(" | ") for line in format_table(results).splitlines()}
    assert rows[f"| {first_token.title}"][1] == "3.50 (POST /chat); 1.25 (OpenAI SDK direct)"
    assert rows[f"| {first_token.title}"][-1] == "+2.25 ms over OpenAI SDK direct |"
    assert gap(results, answer) == "" and rows[f"| {answer.title}"][-1] == "- |"  # no floor measured


async def test_the_chat_row_measured_once_through_a_real_stack(
    postgres_url, temporal_env, api_key, monkeypatch
) -> None:
    from tests.stack import BackgroundStack

    monkeypatch.setattr(chat_timing, "REPS", 1)
    with TimedModelServer(gap=0) as model:
        async with BackgroundStack(
            postgres_url,
            temporal_address(temporal_env),
            run_worker=False,
            task_queue=f"bench-chat-{uuid.uuid4()}",
            openai_api_key="sk-bench",
            openai_base_url=model.base_url,
        ) as stack:
            headers = {"Authorization": f"Bearer {api_key}"}
            async with httpx.AsyncClient(base_url=stack.url, headers=headers, timeout=30) as api:
                agent = (await api.post("/agents", json={"name": "bench", "model": "gpt-4o-mini"})).json()
                session = (await api.post("/sessions", json={"agent": agent["id"]})).json()
                direct = AsyncOpenAI(api_key="sk-bench", base_url=model.base_url)
                measured = await chat_timing.chat_measures(model, api, session["id"], direct)
                await direct.close()
                history = (await api.get(f"/sessions/{session['id']}/history")).json()
    assert set(measured) == {"chat_first_token", "chat_first_token_floor", "chat_answer", "chat_answer_floor"}
    assert all(isinstance(value, float) for value in measured.values())
    # Mint's two chats asked the server (the SDK's two too) and were saved whole, the streamed one included.
    assert len(model.served) == 4
    said = [entry["content"] for entry in history["entries"]]
    assert said.count("Hello from the local model.") == 2
