"""Mint against its peers: the same workloads on Mint, raw Temporal, DBOS and LangGraph in one
run, on one embedded Postgres and one Temporal dev server (tuned as `mint up` tunes it). The peers run in
this process; Mint runs as `mint up` runs it (the API here, the worker in a process of its own).

Run: pip install -e '.[bench]' then python -m bench.peers [--rounds N]
Rounds are interleaved (round 1: Mint, raw Temporal, DBOS, LangGraph; round 2: the same; ...) so that drift
on a busy machine hits every system alike; the table shows each number's median over the rounds. A peer that
is not installed or fails to start says why in its column, and the others run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple, Protocol
from urllib.parse import urlsplit, urlunsplit

if TYPE_CHECKING:
    from tests.stack import LocalMint

MINT, RAW, DBOS, LANGGRAPH = "Mint", "raw Temporal", "DBOS", "LangGraph"
SYSTEMS = (MINT, RAW, DBOS, LANGGRAPH)


class Shown(NamedTuple):
    """One number a system shows in a row: its measure's key, a label, and whether it is a floor (shown
    for reference, left out of the ratio: raw Temporal's in-workflow step records nothing per step)."""

    key: str
    label: str = ""
    floor: bool = False


@dataclass(frozen=True)
class Workload:
    title: str
    cells: dict[str, tuple[Shown, ...]]
    higher_is_better: bool = False
    versus: str | None = None  # the ratio is against this system's first number; None: the best peer's
    # (system, key): the last column also says how many ms Mint's first number is over that one (the
    # targets of starts and chats are in ms over a floor, not ratios).
    over: tuple[str, str] | None = None


WORKLOADS = (
    Workload(
        "pure step, marginal ms/step: (100-step chain - 1-step chain) / 99",
        {
            MINT: (Shown("pure", "evaluate"),),
            RAW: (Shown("pure", "in workflow", floor=True), Shown("pure_local", "local activity")),
            DBOS: (Shown("pure", "step"),),
            LANGGRAPH: (Shown("pure", "async"), Shown("pure_sync", "sync")),
        },
    ),
    Workload(
        "HTTP call step, marginal ms/step: (20-step chain - 1-step chain) / 19",
        {
            MINT: (Shown("http", "api_call"), Shown("http_run", "durability: run")),
            RAW: (Shown("http", "activity"), Shown("http_local", "local activity")),
            DBOS: (Shown("http", "step"),),
            LANGGRAPH: (Shown("http", "async"), Shown("http_sync", "sync")),
        },
    ),
    Workload(
        "1,000 HTTP calls, 50 in flight, s",
        {
            MINT: (Shown("fan_out", "map_reduce"),),
            RAW: (Shown("fan_out", "sliding window"),),
            DBOS: (Shown("fan_out", "gather"), Shown("fan_out_queue", "queue")),
            LANGGRAPH: (Shown("fan_out", "Send"),),
        },
    ),
    Workload(
        "start call answers, median ms (target: raw Temporal + 2)",
        {
            MINT: (Shown("start", "POST"),),
            RAW: (Shown("start", "start_workflow"),),
            DBOS: (Shown("start", "start_workflow_async"),),
        },
        over=(RAW, "start"),
    ),
    Workload(
        "start call answers, p90 ms (target: raw Temporal + 5)",
        {
            MINT: (Shown("start_p90", "POST"),),
            RAW: (Shown("start_p90", "start_workflow"),),
            DBOS: (Shown("start_p90", "start_workflow_async"),),
        },
        over=(RAW, "start_p90"),
    ),
    Workload(
        "streamed chat: ms to the first token beyond the model server's own (target <= 10)",
        {
            MINT: (
                Shown("chat_first_token", "POST /chat"),
                Shown("chat_first_token_floor", "OpenAI SDK direct", floor=True),
            )
        },
        over=(MINT, "chat_first_token_floor"),
    ),
    Workload(
        "chat answer: ms beyond the model server's answer (target <= 10)",
        {
            MINT: (
                Shown("chat_answer", "POST /chat"),
                Shown("chat_answer_floor", "OpenAI SDK direct", floor=True),
            )
        },
        over=(MINT, "chat_answer_floor"),
    ),
    Workload(
        "one-step execution end to end, ms",
        {
            MINT: (Shown("one_step", "evaluate"),),
            RAW: (Shown("one_step", "one activity"),),
            DBOS: (Shown("one_step", "one step"),),
            LANGGRAPH: (Shown("one_step", "one node"),),
        },
    ),
    Workload(
        "throughput, 200 concurrent 3-step executions, exec/s",
        {MINT: (Shown("throughput"),), RAW: (Shown("throughput"),)},
        higher_is_better=True,
        versus=RAW,
    ),
    Workload(
        "p95 latency of those 200, ms",
        {MINT: (Shown("p95"),), RAW: (Shown("p95"),)},
        versus=RAW,
    ),
)

# A system's medians by measure key (a string where every round of that measure failed), or, for a system
# that could not be installed or started, why.
Results = dict[str, dict[str, float | str] | str]


def number(value: float) -> str:
    size = abs(value)
    if size >= 100:
        return f"{value:.0f}"
    return f"{value:.1f}" if size >= 10 else f"{value:.2f}" if size >= 1 else f"{value:.3f}"


def _values(results: Results, system: str, workload: Workload) -> list[tuple[Shown, float | str]]:
    found = results.get(system)
    if not isinstance(found, dict):
        return []
    return [(shown, found[shown.key]) for shown in workload.cells.get(system, ()) if shown.key in found]


def _cell(results: Results, system: str, workload: Workload, first_row: bool) -> str:
    found = results.get(system)
    if isinstance(found, str):
        return f"not run: {found[:70]}" if first_row else "-"
    parts = []
    for shown, value in _values(results, system, workload):
        text = "failed" if isinstance(value, str) else number(value)
        parts.append(f"{text} ({shown.label})" if shown.label else text)
    return "; ".join(parts) or "-"


def ratio(results: Results, workload: Workload) -> str:
    """Mint's numbers over the best peer's (or over `versus`'s first), naming the one they are over; each
    of Mint's numbers by its label when it shows more than one (a call step, and the same as a run)."""
    mint = [(s, v) for s, v in _values(results, MINT, workload) if isinstance(v, float) and not s.floor]
    peers = [
        (value, f"{system} {shown.label}".strip())
        for system in SYSTEMS
        if system != MINT and workload.versus in (None, system)
        for shown, value in _values(results, system, workload)[: 1 if workload.versus else None]
        if isinstance(value, float) and not shown.floor
    ]
    if not mint or not peers:
        return "-"
    best, name = (max if workload.higher_is_better else min)(peers)
    if best <= 0:
        return f"- ({name} is {number(best)})"
    if len(mint) == 1:
        return f"{number(mint[0][1] / best)}x ({name})"
    return "; ".join(f"{number(v / best)}x {s.label}" for s, v in mint) + f" ({name})"


def gap(results: Results, workload: Workload) -> str:
    """How many ms Mint's first number is over the one `workload.over` names ("" when either is missing)."""
    if workload.over is None:
        return ""
    system, key = workload.over
    mint = [v for _, v in _values(results, MINT, workload) if isinstance(v, float)]
    found = [(s, v) for s, v in _values(results, system, workload) if s.key == key and isinstance(v, float)]
    if not mint or not found:
        return ""
    shown, value = found[0]
    difference = mint[0] - value
    over = shown.label if system == MINT else f"{system} {shown.label}".strip()
    return f"{'+' if difference >= 0 else '-'}{number(abs(difference))} ms over {over}"


def last_column(results: Results, workload: Workload) -> str:
    """The ratio to the best peer, and the ms over the workload's floor where it has one."""
    parts = [part for part in (ratio(results, workload), gap(results, workload)) if part and part != "-"]
    return "; ".join(parts) or "-"


def format_table(results: Results, workloads: tuple[Workload, ...] = WORKLOADS) -> str:
    """The markdown table: one row per workload, one column per system, and Mint over the best peer."""
    lines = [
        "| workload | " + " | ".join(SYSTEMS) + " | Mint / best peer |",
        "| --- | " + " | ".join("---" for _ in SYSTEMS) + " | --- |",
    ]
    for i, workload in enumerate(workloads):
        cells = [_cell(results, system, workload, i == 0) for system in SYSTEMS]
        lines.append(f"| {workload.title} | " + " | ".join(cells) + f" | {last_column(results, workload)} |")
    return "\n".join(lines)


class System(Protocol):
    """What each system's module provides (bench/peer_mint.py, peer_temporal.py, peer_dbos.py, ...)."""

    version: str
    notes: tuple[str, ...]

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    def measures(self) -> dict[str, Callable[[], Awaitable[float | dict[str, float]]]]: ...


@dataclass
class Run:
    """The started systems, and what each measure gave in each round."""

    systems: dict[str, System] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    rounds: dict[str, dict[str, list[float | str]]] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)

    def results(self) -> Results:
        results: Results = dict(self.failed)
        for system, measures in self.rounds.items():
            results[system] = {key: _median(values) for key, values in measures.items()}
        return results


def _median(values: list[float | str]) -> float | str:
    numbers = [v for v in values if isinstance(v, float | int)]
    return float(statistics.median(numbers)) if numbers else str(values[-1])


def _database_url(base: str, name: str) -> str:
    return urlunsplit(urlsplit(base)._replace(path=f"/{name}"))


async def _make(system: str, local: LocalMint, url: str) -> System:
    """One system, not started yet; raises ImportError when its package is not installed."""
    if system == MINT:
        from bench.peer_mint import Mint

        return Mint(local, url)
    if system == RAW:
        from bench.peer_temporal import RawTemporal

        return RawTemporal(local.env.client, url)
    if system == DBOS:
        from bench.peer_dbos import Dbos

        await local.pool.execute("CREATE DATABASE peers_dbos")  # its system database
        return Dbos(_database_url(local.database_url, "peers_dbos"), url)
    from bench.peer_langgraph import LangGraph

    await local.pool.execute("CREATE DATABASE peers_langgraph")  # its checkpoint tables
    return LangGraph(_database_url(local.database_url, "peers_langgraph"), url)


async def _start(made: System) -> None:
    """Start it and run its one-step execution once, untimed (a warm-up, and proof that it works)."""
    await made.start()
    try:
        await made.measures()["one_step"]()
    except BaseException:
        await made.close()
        raise


async def start_all(local: LocalMint, url: str) -> Run:
    run = Run()
    for system in SYSTEMS:
        try:
            made = await _make(system, local, url)
            await _start(made)
        except ImportError as exc:
            run.failed[system] = f"{exc.name or exc} is not installed (pip install -e '.[bench]')"
            continue
        except Exception as exc:  # a system that fails to start says why in its column; the rest run
            traceback.print_exc()
            run.failed[system] = f"failed to start: {type(exc).__name__}: {exc}"
            continue
        run.systems[system], run.versions[system], run.rounds[system] = made, made.version, {}
    return run


async def one_round(run: Run, round_number: int) -> None:
    for system, made in run.systems.items():
        for key, measure in made.measures().items():
            print(f"round {round_number}: {system} {key}", file=sys.stderr, flush=True)
            try:
                value: float | str | dict[str, float] = await measure()
            except Exception as exc:  # one failed measure is shown as failed; the others still run
                traceback.print_exc()
                value = f"{type(exc).__name__}: {exc}"
            for name, v in (value if isinstance(value, dict) else {key: value}).items():
                run.rounds[system].setdefault(name, []).append(v)


async def close_all(run: Run) -> None:
    for made in reversed(list(run.systems.values())):
        try:
            await made.close()
        except Exception:
            traceback.print_exc()


def report(run: Run, rounds: int, load: tuple[tuple[float, ...], tuple[float, ...]]) -> str:
    """The table, with the load average before and after, the versions, how each system ran, and
    the failures."""
    results = run.results()
    errors = [
        f"- {system} {key}: {value}"
        for system, measures in results.items()
        if isinstance(measures, dict)
        for key, value in measures.items()
        if isinstance(value, str)
    ]
    lines = [
        f"Medians of {rounds} interleaved round(s) on {os.cpu_count()} CPUs; load average (1, 5, 15 min) "
        f"before {_load(load[0])}, after {_load(load[1])}.",
        "",
        format_table(results),
        "",
        "Versions: " + "; ".join(f"{s}: {v}" for s, v in run.versions.items()),
        "",
        *[f"- {note}" for made in run.systems.values() for note in made.notes],
        *(["", "Failures:", *errors] if errors else []),
    ]
    return "\n".join(lines)


def _load(values: tuple[float, ...]) -> str:
    return " ".join(f"{v:.2f}" for v in values)


async def main(rounds: int) -> None:
    from tests.local_http import LocalServer
    from tests.stack import LocalMint

    before = os.getloadavg()
    local = await LocalMint().start()
    try:
        with LocalServer() as http:
            run = await start_all(local, http.url)
            try:
                for i in range(1, rounds + 1):
                    await one_round(run, i)
            finally:
                await close_all(run)
                print(report(run, rounds, (before, os.getloadavg())), flush=True)
    finally:
        await local.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    asyncio.run(main(parser.parse_args().rounds))
