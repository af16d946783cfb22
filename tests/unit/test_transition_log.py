"""The transition log: which sequences are allowed (contracts/transitions.py), what a value must be to be
recorded, and how the workflow batches transitions (workflows/transition_log.py), seen both directly and
through the writes a run makes."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest
from temporalio import workflow

from contracts.transitions import InvalidTransition, Position, TransitionBatch, check_sequence
from contracts.wire import plain
from tests.unit.harness import task
from workflows.transition_log import MAX_BATCH_TRANSITIONS, TransitionLog, UnrecordableValue, encode

HERE = Position("main", 2, "scope")

# Allowed sequences ---------------------------------------------------------------------------------------


def test_an_execution_starts_with_init():
    check_sequence(None, ["init", "step", "finish"])
    with pytest.raises(InvalidTransition, match="a 'step' transition cannot follow 'nothing'"):
        check_sequence(None, ["step"])


@pytest.mark.parametrize("terminal", ["finish", "error", "cancelled"])
def test_nothing_follows_a_terminal_transition(terminal):
    with pytest.raises(InvalidTransition, match=f"cannot follow '{terminal}'"):
        check_sequence(terminal, ["step"])
    with pytest.raises(InvalidTransition):
        check_sequence("step", [terminal, "finish"])


def test_init_comes_only_once():
    with pytest.raises(InvalidTransition):
        check_sequence("step", ["init"])


def test_branches_and_waits_interleave_freely():
    check_sequence(
        "init", ["init_branch", "wait", "step", "wait", "resume", "finish_branch", "resume", "error"]
    )


def test_plain_turns_dataclasses_into_dicts_and_leaves_the_rest():
    batch = TransitionBatch("e", "d", [{"seq": 1}], "running")
    assert plain(batch) == {
        "execution_id": "e",
        "developer_id": "d",
        "transitions": [{"seq": 1}],
        "status": "running",
        "output": None,
        "error": None,
    }
    assert plain({"a": 1}) == {"a": 1}


# Recordable values ---------------------------------------------------------------------------------------


def test_a_value_is_recorded_as_json_text():
    assert encode({"a": [1, "é"]}, HERE) == '{"a": [1, "é"]}'


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param(float("nan"), "the output of main[2] contains NaN or Infinity", id="nan"),
        pytest.param(10**5000, "the output of main[2] contains an integer too long to write", id="long-int"),
        pytest.param({"k": "a\x00"}, "the output of main[2] at k contains a NUL character", id="nul"),
        pytest.param(["\ud800"], "the output of main[2] at [0] contains a lone surrogate", id="surrogate"),
    ],
)
def test_a_value_postgres_cannot_store_is_refused_naming_where(value, message):
    with pytest.raises(UnrecordableValue) as refused:
        encode(value, HERE)
    assert str(refused.value).startswith(message)


def test_a_yields_arguments_and_a_log_text_are_named_as_such():
    with pytest.raises(UnrecordableValue, match="the arguments of workflow 'main'"):
        encode("\x00", HERE, "init_branch")
    with pytest.raises(UnrecordableValue, match=r"the log text of main\[2\]"):
        encode("\x00", HERE, "log")


# Batching (TransitionLog, with Temporal's workflow clock and ids stood in for) ----------------------------


@pytest.fixture
def log(monkeypatch) -> TransitionLog:
    monkeypatch.setattr(workflow, "random", random.Random)
    monkeypatch.setattr(workflow, "time_ns", lambda: int(datetime(2026, 1, 1, tzinfo=UTC).timestamp() * 1e9))
    return TransitionLog("execution", "developer")


def test_each_transition_gets_the_next_seq_and_its_positions(log):
    log.add("init", {"n": 1}, Position("main", 0, "s"))
    log.add(
        "step", 2, Position("main", 0, "s"), Position("main", 1, "s"), label="first", metadata={"item": 0}
    )
    first, second = log.pending
    assert (first["seq"], second["seq"]) == (1, 2)
    assert second["current"] == {"workflow": "main", "step": 0, "scope_id": "s"}
    assert second["next"] == {"workflow": "main", "step": 1, "scope_id": "s"} and first["next"] is None
    assert (second["step_label"], second["metadata"], second["output"]) == ("first", {"item": 0}, "2")
    assert second["created_at"] == "2026-01-01T00:00:00+00:00"


def test_the_log_is_full_at_500_transitions(log):
    for _ in range(MAX_BATCH_TRANSITIONS - 1):
        log.add("step", 1, HERE)
    assert not log.full
    log.add("step", 1, HERE)
    assert log.full


def test_the_log_is_full_at_512_kb(log):
    log.add("step", "x" * (512 * 1024), HERE)
    assert log.full and len(log.pending) == 1


def test_adopted_transitions_are_renumbered_in_this_logs_sequence(log):
    log.add("init", None, HERE)
    child = TransitionLog("execution", "developer", collect=True)
    child.add("step", 1, HERE)
    child.add("step", 2, HERE)
    log.adopt(child.take())
    assert [t["seq"] for t in log.pending] == [1, 2, 3] and child.pending == []


def test_an_unrecordable_output_is_refused_before_it_takes_a_seq(log):
    with pytest.raises(UnrecordableValue):
        log.add("step", float("inf"), HERE)
    assert log.seq == 0 and log.pending == []


# What a run writes -----------------------------------------------------------------------------------------


async def test_a_run_of_pure_steps_costs_one_write(mint):
    done = await mint.succeed(task(*[{"evaluate": {"i": f"$ {i}"}} for i in range(20)]))
    assert done.row.batches == 1 and done.row.statuses == ["succeeded"]
    assert len(done.transitions) == 22


async def test_what_is_pending_is_written_beside_a_call_and_the_rest_with_the_end(mint):
    tool = {"name": "ping", "type": "api_call", "api_call": {"url": "https://x.example"}}
    done = await mint.succeed(
        task({"evaluate": {"x": "$ 1"}}, {"tool": "ping", "arguments": {}}, tools=[tool])
    )
    assert done.row.statuses == ["running", "succeeded"]  # one batch before the call, one at the end


async def test_the_status_is_awaiting_input_while_a_wait_is_open_and_running_again_after(timed_mint):
    spec = task({"wait_for_input": {"info": "$ 'ok?'"}}, {"sleep": 60}, {"evaluate": {"x": "$ 1"}})
    execution_id = await timed_mint.start(spec)
    await timed_mint.until(execution_id, "wait")
    await timed_mint.resume(execution_id, "yes")
    done = await timed_mint.finish(execution_id)
    assert done.row.statuses == ["awaiting_input", "running", "succeeded"]


async def test_every_transition_of_an_execution_has_one_scope_per_run_of_a_workflow(mint):
    spec = task({"workflow": "a"}, {"workflow": "a"}, a=[{"evaluate": {"x": "$ 1"}}])
    done = await mint.succeed(spec)
    scopes = [t["current"]["scope_id"] for t in done.of_type("init_branch")]
    assert len(set(scopes)) == 2 and done.transitions[0]["current"]["scope_id"] not in scopes
