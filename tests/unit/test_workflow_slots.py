"""Workflow task slots (infra/temporal/workflow_slots.py): a task waiting on a call in the worker takes none of
the limit, and the number of tasks computed at once shrinks while the event loop lags and grows back."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from infra.temporal.workflow_slots import FLOOR, WorkflowTaskSlots, next_target

CONTEXT: Any = None  # the slot supplier reads nothing from Temporal's contexts


async def test_a_task_waiting_on_a_call_in_the_worker_frees_its_share_of_the_limit():
    slots = WorkflowTaskSlots(limit=2, most=3)
    await slots.reserve_slot(CONTEXT)
    await slots.reserve_slot(CONTEXT)
    third = asyncio.create_task(slots.reserve_slot(CONTEXT))
    await asyncio.sleep(0.01)
    assert not third.done()  # two computing: the limit
    with slots.waiting_on_call("run-1"):
        await asyncio.wait_for(third, 1)  # run-1's task only waits on the network now: idle
        assert (slots.held, slots.computing) == (3, 2)
        assert slots.try_reserve_slot(CONTEXT) is None  # three held in all: `most`
    assert slots.computing == 3


async def test_a_released_slot_wakes_a_waiting_reservation():
    slots = WorkflowTaskSlots(limit=1, most=1)
    await slots.reserve_slot(CONTEXT)
    waiting = asyncio.create_task(slots.reserve_slot(CONTEXT))
    await asyncio.sleep(0.01)
    assert not waiting.done()
    slots.release_slot(CONTEXT)
    await asyncio.wait_for(waiting, 1)
    assert slots.held == 1


async def test_a_release_from_another_thread_wakes_the_loop():
    slots = WorkflowTaskSlots(limit=1, most=1)
    await slots.reserve_slot(CONTEXT)
    waiting = asyncio.create_task(slots.reserve_slot(CONTEXT))
    await asyncio.sleep(0.01)
    await asyncio.to_thread(slots.release_slot, CONTEXT)
    await asyncio.wait_for(waiting, 1)


def test_the_target_shrinks_while_the_loop_lags_and_grows_back_to_the_limit():
    target = 100
    for _ in range(30):
        target = next_target(target, 100, lag=0.5)
    assert target == FLOOR
    target = next_target(target, 100, lag=0.03)  # between: kept
    assert target == FLOOR
    for _ in range(30):
        target = next_target(target, 100, lag=0.0)
    assert target == 100
    assert next_target(1, 1, lag=1.0) == 1  # never below a limit smaller than the floor


async def test_the_target_follows_the_loops_lag():
    slots = WorkflowTaskSlots(limit=50, most=50)
    await slots.reserve_slot(CONTEXT)  # starts reading the lag
    loop = asyncio.get_running_loop()
    for _ in range(3):
        await asyncio.sleep(0.12)
        loop.call_soon(time.sleep, 0.2)  # the loop blocked: a timer fires late
    await asyncio.sleep(0.3)
    assert slots.target < 50
