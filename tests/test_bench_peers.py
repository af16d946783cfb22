"""bench/peers.py's table: which peer each ratio is over, and how failures show (made-up numbers: no
timing is asserted here, and none of the peers needs to be installed)."""

from __future__ import annotations

from bench.peers import LANGGRAPH, MINT, RAW, SYSTEMS, WORKLOADS, Run, Shown, Workload, format_table, ratio

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
