"""sleep (a durable timer, in skipped time), wait_for_input (a wait on the resume signal) and cancelling either.
The unit-level mirror of the sleep, wait and cancel tests in tests/test_steps.py."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from temporalio.api.enums.v1 import EventType

from tests.unit.harness import task
from workflows.execution import TaskExecutionWorkflow


async def timers(mint, execution_id: str) -> list[float]:
    """The durations (seconds) of the Temporal timers the execution started."""
    history = await mint.env.client.get_workflow_handle(execution_id).fetch_history()
    return [
        e.timer_started_event_attributes.start_to_fire_timeout.ToTimedelta().total_seconds()
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_TIMER_STARTED
    ]


def at(transition: dict) -> datetime:
    return datetime.fromisoformat(transition["created_at"])


# sleep ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(task({"evaluate": {"s": '_["s"]'}}, {"sleep": '_["s"] * 3600'}), id="seed"),
        pytest.param(task({"evaluate": {"s": "$ _.s"}}, {"sleep": {"hours": "$ _.s"}}), id="dollar"),
    ],
)
async def test_sleep_is_a_durable_timer_and_passes_its_input_through(timed_mint, spec):
    done = await timed_mint.succeed(spec, {"s": 24})
    assert done.output == {"s": 24}
    assert done.step("main", 1)["output"] == {"s": 24}
    assert await timers(timed_mint, done.id) == [86400.0]
    assert at(done.transitions[-1]) - at(done.step("main", 0)) >= timedelta(days=1)


async def test_sleep_units_add_up(timed_mint):
    done = await timed_mint.succeed(task({"sleep": {"days": 1, "hours": "$ 1", "minutes": 1, "seconds": 30}}))
    assert await timers(timed_mint, done.id) == [86400 + 3600 + 60 + 30.0]


async def test_sleep_zero_starts_no_timer(mint):
    done = await mint.succeed(task({"evaluate": {"x": "$ 1"}}, {"sleep": {"seconds": 0}}))
    assert done.output == {"x": 1}
    assert await timers(mint, done.id) == []


async def test_a_negative_sleep_fails_the_step(mint):
    done = await mint.fail(task({"sleep": {"seconds": "$ -5"}}))
    assert done.error == "StepFailed: sleep must not be negative (got -5.0 seconds)"


async def test_a_sleep_of_something_not_a_number_fails_the_step(mint):
    done = await mint.fail(task({"sleep": "$ 'soon'"}))
    assert done.error == "StepFailed: sleep needs a number of seconds, got 'soon'"


async def test_the_steps_before_a_sleep_are_written_before_it_starts(mint):
    spec = task({"evaluate": {"x": "$ 1"}}, {"sleep": 3600}, {"evaluate": {"never": "$ 1"}})
    execution_id = await mint.start(spec)
    running = await mint.until(execution_id, "step")  # no time is skipped here: the timer is still pending
    assert running.types == ["init", "step"] and running.status == "running"


async def test_cancel_while_sleeping_ends_the_execution_cancelled(mint):
    spec = task({"evaluate": {"x": "$ 1"}}, {"sleep": 3600}, {"evaluate": {"never": "$ 1"}})
    execution_id = await mint.start(spec)
    await mint.until(execution_id, "step")
    done = await mint.cancel(execution_id)
    assert done.status == "cancelled"
    assert done.types == ["init", "step", "cancelled"]
    assert done.transitions[-1]["current"]["workflow"] == "main"


# wait_for_input --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(
            task(
                {"wait_for_input": {"info": {"question": '"Name?"', "n": '_["n"]'}}},
                {"evaluate": {"greeting": '"Hi " + _["name"]'}},
            ),
            id="seed",
        ),
        pytest.param(
            task(
                {"wait_for_input": {"info": {"question": "Name?", "n": "$ _.n"}}},
                {"evaluate": {"greeting": "$ 'Hi ' + _.name"}},
            ),
            id="dollar",
        ),
    ],
)
async def test_wait_for_input_parks_until_resumed_and_the_input_is_its_output(mint, spec):
    execution_id = await mint.start(spec, {"n": 3})
    waiting = await mint.until(execution_id, "wait")
    assert waiting.status == "awaiting_input"
    assert waiting.types == ["init", "wait"]
    assert waiting.transitions[-1]["output"] == {"info": {"question": "Name?", "n": 3}}
    assert waiting.transitions[-1]["current"]["workflow"] == "main"

    await mint.resume(execution_id, {"name": "Ada"})
    done = await mint.finish(execution_id)
    assert done.status == "succeeded"
    assert done.output == {"greeting": "Hi Ada"}
    assert done.types == ["init", "wait", "resume", "step", "step", "finish"]
    resume = done.transitions[2]
    assert resume["output"] == {"name": "Ada"}
    assert resume["metadata"]["wait_seq"] == done.transitions[1]["seq"]
    assert done.step("main", 0)["output"] == {"name": "Ada"}


async def test_a_wait_that_times_out_continues_with_its_default(timed_mint):
    spec = task(
        {"wait_for_input": {"info": "$ 'ok?'", "timeout": 3600, "on_timeout": "continue", "default": "yes"}}
    )
    done = await timed_mint.succeed(spec)
    assert done.output == "yes"
    assert done.types == ["init", "wait", "resume", "step", "finish"]
    assert done.transitions[2]["metadata"]["timed_out"] is True


async def test_a_wait_that_times_out_fails_by_default(timed_mint):
    done = await timed_mint.fail(task({"wait_for_input": {"info": "$ 'ok?'", "timeout": 60}}))
    assert done.error == "WaitTimeout: main[0]: no input within 60.0 seconds"


async def test_a_duplicate_resume_is_dropped_and_never_answers_a_later_question(mint):
    spec = task({"wait_for_input": {"info": "$ 'first?'"}}, {"wait_for_input": {"info": "$ 'second?'"}})
    execution_id = await mint.start(spec)
    first = (await mint.until(execution_id, "wait")).transitions[-1]["seq"]
    await mint.resume(execution_id, "one")
    await mint.until(execution_id, "wait", 2)
    handle = mint.env.client.get_workflow_handle(execution_id)
    await handle.signal(TaskExecutionWorkflow.resume, {"wait_seq": first, "input": "one again"})
    with pytest.raises(AssertionError, match="never saw 2 'resume'"):
        await mint.until(execution_id, "resume", 2, timeout=0.3)
    await mint.resume(execution_id, "two")
    done = await mint.finish(execution_id)
    assert done.output == "two"


async def test_a_resume_that_comes_before_its_wait_opens_answers_it(timed_mint):
    """What a lost worker leaves: it wrote the `wait` (so the API sent the resume) and died before its workflow
    task completed; the next worker replays from before the wait and gets the resume first. Here the resume
    comes while the execution sleeps before the wait, addressed to the seq the wait is written at."""
    spec = task({"evaluate": {"x": "$ 1"}}, {"sleep": {"hours": 1}}, {"wait_for_input": {"info": "$ 'ok?'"}})
    execution_id = await timed_mint.start(spec)
    await timed_mint.until(execution_id, "step")
    handle = timed_mint.env.client.get_workflow_handle(execution_id)
    await handle.signal(TaskExecutionWorkflow.resume, {"wait_seq": 4, "input": "early"})
    done = await timed_mint.finish(execution_id)
    assert done.status == "succeeded", done.types
    assert done.output == "early"
    assert done.types == ["init", "step", "step", "wait", "resume", "step", "finish"]
    assert done.transitions[3]["seq"] == 4


async def test_cancel_while_waiting_for_input_ends_the_execution_cancelled(mint):
    spec = task({"wait_for_input": {"info": {"q": "$ 'why?'"}}}, {"evaluate": {"never": "ran"}})
    execution_id = await mint.start(spec)
    await mint.until(execution_id, "wait")
    done = await mint.cancel(execution_id)
    assert done.status == "cancelled"
    assert done.types == ["init", "wait", "cancelled"]
