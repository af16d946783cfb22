"""Timing helpers every system in bench/peers.py measures with, so that all are timed the same way."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

REPS = 5  # pairs of chain runs per round; a round keeps their median
START_REPS = 20  # start calls per round (enough for a 90th percentile); a round keeps their median and p90

H = TypeVar("H")
Run = Callable[[], Awaitable[object]]


async def elapsed_ms(run: Run) -> float:
    start = time.perf_counter()
    await run()
    return (time.perf_counter() - start) * 1000


async def elapsed_s(run: Run) -> float:
    return await elapsed_ms(run) / 1000


async def median_ms(run: Run, reps: int = REPS) -> float:
    return statistics.median([await elapsed_ms(run) for _ in range(reps)])


async def marginal_ms(chain: Callable[[int], Awaitable[object]], steps: int, reps: int = REPS) -> float:
    """What one more step costs: (a chain of `steps` - a chain of one) / (steps - 1), the median over `reps`
    pairs run back to back (so that drift on a busy machine cancels out within a pair)."""
    differences = []
    for _ in range(reps):
        one = await elapsed_ms(lambda: chain(1))
        differences.append(await elapsed_ms(lambda: chain(steps)) - one)
    return statistics.median(differences) / (steps - 1)


async def start_ms(
    start: Callable[[], Awaitable[H]], finish: Callable[[H], Awaitable[object]], reps: int = START_REPS
) -> dict[str, float]:
    """How long a start call takes to answer: the median (`start`) and 90th percentile (`start_p90`) of
    `reps` starts; what each started is then awaited, untimed."""
    times = []
    for _ in range(reps):
        began = time.perf_counter()
        handle = await start()
        times.append((time.perf_counter() - began) * 1000)
        await finish(handle)
    p90 = statistics.quantiles(times, n=10, method="inclusive")[-1] if len(times) > 1 else times[0]
    return {"start": statistics.median(times), "start_p90": p90}


def failed_note(system: str, failures: list[str]) -> tuple[str, ...]:
    """A note for the report naming how many concurrent runs failed (left out of the numbers), and why."""
    if not failures:
        return ()
    reasons = sorted(set(failures))
    return (f"{system}: {len(failures)} of the throughput runs failed (left out): " + "; ".join(reasons[:3]),)


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[-1]


async def concurrently(run: Run, count: int, failures: list[str]) -> dict[str, float]:
    """`count` runs at once: the ones that succeeded per second over the whole batch, and the p95 of their
    latencies; each one that failed is added to `failures` (the report lists them)."""
    start = time.perf_counter()
    outcomes = await asyncio.gather(*[elapsed_ms(run) for _ in range(count)], return_exceptions=True)
    total = time.perf_counter() - start
    latencies = [o for o in outcomes if isinstance(o, float)]
    failures.extend(f"{type(o).__name__}: {o}" for o in outcomes if isinstance(o, BaseException))
    if len(latencies) < 2:
        raise RuntimeError(f"{count - len(latencies)} of {count} failed, the first: {failures[-1]}")
    return {"throughput": len(latencies) / total, "p95": p95(latencies)}
