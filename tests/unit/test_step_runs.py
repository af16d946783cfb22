"""A run of steps in the worker (activities/step_runs.py StepRunner), run directly with a fake call, look-up
and record: the order of steps and calls, what each record holds, the same ids and keys every time the run
is made again, the answers found recorded, and where and how a run stops."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import math
from typing import Any

from temporalio.exceptions import ApplicationError

from activities.call_batches import MAX_BATCH_ANSWER_BYTES
from activities.step_runs import StepRunner
from contracts.calls import CallAnswer, Owner, RecordedAnswer
from contracts.executions import ExecutionParams
from contracts.step_runs import StepRun, StepRunOutcome
from contracts.transitions import Position, TransitionRow
from workflows.transition_log import UnrecordableValue, encode

ECHO = {
    "name": "echo",
    "type": "api_call",
    "api_call": {"method": "GET", "url": "https://x.example/{{ arguments.n }}"},
}
FUNCTION = {"name": "client_side", "type": "function", "function": {"parameters": {"type": "object"}}}
SEQ = 3  # the transition before the run's first


def call(n: str, **extra: Any) -> dict[str, Any]:
    return {"tool": "echo", "arguments": {"n": n}, **extra}


CHAIN = [
    {"evaluate": {"n": "$ _['start']"}, "label": "first"},
    call("$ _.n"),
    {"set": {"seen": "$ _['url']"}},
    call("$ steps['first'].output.n + 1", label="second"),
    {"log": "got {{ _.url }}"},
    {"evaluate": {"last": "$ _['url']", "r": "$ random.random()", "seen": "$ state.seen"}},
]


def step_run(main: list[dict], count: int | None = None, seed: int = 7, state: dict | None = None) -> StepRun:
    """A run of main's first `count` steps (all of them by default), on input {"start": 1}."""
    task = {"name": "a run", "defaults": {"durability": "run"}, "main": main}
    params = ExecutionParams(
        execution_id="execution",
        developer_id="developer",
        task=task,
        dialect="dollar",
        input={"start": 1},
        tools=[ECHO, FUNCTION],
        null_text="",
    )
    return StepRun(
        params=params,
        first=0,
        count=len(main) if count is None else count,
        frame={"name": "main", "scope_id": "scope", "inputs": [{"start": 1}]},
        state=dict(state or {}),
        labels={},
        owner=Owner("developer", "agent", "execution"),
        seed=seed,
        now="2025-01-02T03:04:05+00:00",
        seq=SEQ,
    )


class Calls:
    """call_api, faked: answers {"url": ...} (or what `answer` makes of the request); `fail` maps a URL to
    the errors its attempts raise, in order."""

    def __init__(self, fail: dict[str, list[Exception]] | None = None, answer: Any = None):
        self.fail, self.answer = fail or {}, answer
        self.requests: list[dict[str, Any]] = []

    async def __call__(self, request: dict[str, Any]) -> CallAnswer:
        self.requests.append(copy.deepcopy(request))
        failures = self.fail.get(request["url"])
        if failures:
            raise failures.pop(0)
        response = self.answer(request) if self.answer else {"url": request["url"]}
        return CallAnswer(response=response, attempt=99)

    @property
    def urls(self) -> list[str]:
        return [r["url"] for r in self.requests]

    @property
    def keys(self) -> list[str]:
        return [r["headers"]["Idempotency-Key"] for r in self.requests]


class Book:
    """The store, faked: what look_up was asked and answers (`recorded`), and each record's rows and answers."""

    def __init__(self, recorded: dict[str, Any] | None = None):
        self.recorded = recorded or {}
        self.asked: list[list[str]] = []
        self.writes: list[tuple[list[TransitionRow], list[RecordedAnswer]]] = []

    async def look_up(self, call_ids: list[str]) -> dict[str, Any]:
        self.asked.append(list(call_ids))
        return {i: self.recorded[i] for i in call_ids if i in self.recorded}

    async def record(self, rows: list[TransitionRow], answers: list[RecordedAnswer]) -> None:
        await asyncio.sleep(0)
        self.writes.append((list(rows), list(answers)))

    @property
    def rows(self) -> list[TransitionRow]:
        return [row for rows, _ in self.writes for row in rows]

    @property
    def answers(self) -> list[RecordedAnswer]:
        return [answer for _, answers in self.writes for answer in answers]

    def as_recorded(self) -> dict[str, Any]:
        """The answers recorded, as the look-up of a run made again returns them (JSON, by call id)."""
        return {a.call_id: dataclasses.asdict(a.answer) for a in self.answers}


async def go_with(run: StepRun, calls: Calls, book: Book) -> StepRunOutcome:
    return await StepRunner(run, calls, book.look_up, book.record).go()


async def go(run: StepRun, calls: Calls | None = None) -> StepRunOutcome:
    return await go_with(run, calls or Calls(), Book())


def steps_of(rows: list[TransitionRow]) -> list[int]:
    return [row["current"]["step"] for row in rows]


async def test_the_run_evaluates_its_steps_in_order_and_records_each_answer_with_the_steps_before_it():
    calls, book = Calls(), Book()
    outcome = await go_with(step_run(CHAIN), calls, book)
    assert calls.urls == ["https://x.example/1", "https://x.example/2"]
    assert [r.output for r in outcome.ran][:5] == [
        {"n": 1},
        {"url": "https://x.example/1"},
        {"seen": "https://x.example/1"},
        {"url": "https://x.example/2"},
        {"url": "https://x.example/2"},  # a log step passes its input on
    ]
    assert outcome.ran[5].output["last"] == "https://x.example/2"
    assert outcome.ran[5].output["seen"] == "https://x.example/1"
    assert outcome.ran[4].metadata == {"log": "got https://x.example/2"}
    assert outcome.state == {"seen": "https://x.example/1"} and outcome.failure is None
    # Each answer is recorded once, with the transitions up to its own step; the rest at the end.
    assert [steps_of(rows) for rows, _ in book.writes] == [[0, 1], [2, 3], [4, 5]]
    assert [len(answers) for _, answers in book.writes] == [1, 1, 0]
    assert [a.answer.response for a in book.answers] == [{"url": u} for u in calls.urls]
    assert [a.answer.attempt for a in book.answers] == [1, 1]  # the attempt that answered, not the fake's
    assert book.asked == [[a.call_id for a in book.answers]]  # looked up once, every call id of the run
    assert [row["seq"] for row in book.rows] == list(range(SEQ + 1, SEQ + 7))
    assert [(row["next"] or {}).get("step") for row in book.rows] == [1, 2, 3, 4, 5, None]
    assert [row["step_label"] for row in book.rows] == ["first", None, None, "second", None, None]
    assert book.rows[1]["metadata"] == {"attempts": 1}


async def test_a_run_that_ends_before_the_workflows_last_step_points_its_last_transition_on():
    book = Book()
    outcome = await go_with(step_run(CHAIN, count=4), Calls(), book)
    assert len(outcome.ran) == 4
    assert [(row["next"] or {}).get("step") for row in book.rows] == [1, 2, 3, 4]


async def test_a_run_made_again_gives_the_same_call_ids_keys_transition_ids_and_outputs():
    made = []
    for _ in range(2):
        calls, book = Calls(), Book()
        outcome = await go_with(step_run(CHAIN), calls, book)
        ids = [a.call_id for a in book.answers]
        made.append((ids, calls.keys, [row["id"] for row in book.rows], outcome.ran, outcome.state))
    assert made[0] == made[1]
    ids, keys, rows, _, _ = made[0]
    assert len(set(ids + keys + rows)) == 2 + 2 + 6  # and no two alike
    other_calls, other = Calls(), Book()
    await go_with(step_run(CHAIN, seed=8), other_calls, other)
    assert other_calls.keys != keys and [a.call_id for a in other.answers] != ids  # the seed makes them


async def test_a_run_made_again_after_its_calls_answered_makes_no_call_and_ends_the_same():
    first_calls, first = Calls(), Book()
    before = await go_with(step_run(CHAIN), first_calls, first)
    calls, again = Calls(), Book(recorded=first.as_recorded())
    after = await go_with(step_run(CHAIN), calls, again)
    assert calls.requests == []
    assert (after.ran, after.state, after.failure) == (before.ran, before.state, None)
    assert again.answers == []  # nothing new to record
    assert [row["id"] for row in again.rows] == [row["id"] for row in first.rows]
    assert [row["output"] for row in again.rows] == [row["output"] for row in first.rows]


async def test_a_run_made_again_mid_way_makes_only_the_call_in_flight_with_the_same_key():
    first_calls, first = Calls(), Book()
    await go_with(step_run(CHAIN), first_calls, first)
    only_the_first = {first.answers[0].call_id: dataclasses.asdict(first.answers[0].answer)}
    calls, again = Calls(), Book(recorded=only_the_first)
    await go_with(step_run(CHAIN), calls, again)
    assert calls.urls == ["https://x.example/2"]
    assert calls.keys == first_calls.keys[1:]
    assert [a.call_id for a in again.answers] == [first.answers[1].call_id]


async def test_an_expression_that_fails_stops_the_run_before_its_step_with_the_state_before_it():
    main = [
        {"set": {"a": 1}},
        call("$ 1"),
        {"set": {"a": 2, "b": "$ 1 / 0"}},  # fails after its first key
        call("$ 2"),
    ]
    calls, book = Calls(), Book()
    outcome = await go_with(step_run(main, state={"kept": True}), calls, book)
    assert [r.output for r in outcome.ran] == [{"a": 1}, {"url": "https://x.example/1"}]
    assert outcome.state == {"kept": True, "a": 1}
    assert outcome.failure is None  # the workflow runs that step itself, and fails there
    assert calls.urls == ["https://x.example/1"]
    assert steps_of(book.rows) == [0, 1]


async def test_arguments_that_fail_stop_the_run_before_the_call_and_record_the_steps_before_it():
    main = [call("$ 1"), {"evaluate": {"x": 1}}, call("$ _['nope']"), call("$ 3")]
    calls, book = Calls(), Book()
    outcome = await go_with(step_run(main), calls, book)
    assert len(outcome.ran) == 2 and calls.urls == ["https://x.example/1"]
    assert [steps_of(rows) for rows, _ in book.writes] == [[0], [1]]  # the evaluate's row, at the end


async def test_a_call_the_worker_does_not_make_stops_the_run_before_it():
    main = [call("$ 1"), {"tool": "client_side", "arguments": {}}, call("$ 3")]
    outcome = await go(step_run(main))
    assert len(outcome.ran) == 1 and outcome.failure is None


async def test_a_call_that_fails_its_last_attempt_ends_the_run_with_its_failure():
    down = ApplicationError("https://x.example/2 answered 503", type="HttpUnavailable")
    retry = {"max_attempts": 2, "initial_interval": 0.001}
    main = [call("$ 1"), {"evaluate": {"x": 2}}, call("$ _.x", timeout=5, retry=retry), call("$ 3")]
    calls, book = Calls(fail={"https://x.example/2": [down, down]}), Book()
    outcome = await go_with(step_run(main), calls, book)
    assert calls.urls == ["https://x.example/1", "https://x.example/2", "https://x.example/2"]
    assert outcome.failure is not None and outcome.failure.type == "HttpUnavailable"
    assert outcome.failure.message == "https://x.example/2 answered 503"
    assert outcome.failed_after == 5.0
    assert [r.output for r in outcome.ran] == [{"url": "https://x.example/1"}, {"x": 2}]
    assert steps_of(book.rows) == [0, 1] and len(book.answers) == 1


async def test_a_permanent_error_is_not_attempted_again():
    refused = ApplicationError("refused", type="EgressRefused", non_retryable=True)
    main = [call("$ 1"), call("$ 2")]
    calls = Calls(fail={"https://x.example/1": [refused]})
    outcome = await go(step_run(main), calls)
    assert calls.urls == ["https://x.example/1"] and outcome.ran == []
    assert outcome.failure is not None and outcome.failure.non_retryable


async def test_a_set_then_a_failing_step_leaves_the_state_as_after_the_set():
    main = [call("$ 1"), {"set": {"k": "$ _['url']"}}, {"evaluate": {"x": "$ undefined_name"}}, call("$ 2")]
    outcome = await go(step_run(main, state={"k": 0}))
    assert len(outcome.ran) == 2
    assert outcome.state == {"k": "https://x.example/1"}


async def test_a_pure_step_whose_output_cannot_be_recorded_is_left_to_the_workflow():
    main = [call("$ 1"), {"evaluate": {"x": "$ 'a\\x00b'"}}, call("$ 2")]
    calls, book = Calls(), Book()
    outcome = await go_with(step_run(main), calls, book)
    assert len(outcome.ran) == 1 and calls.urls == ["https://x.example/1"]
    assert steps_of(book.rows) == [0]


async def test_a_call_whose_answer_cannot_be_recorded_ends_the_run_saying_why():
    """The call was made, so its step fails in the run (the workflow raises UnrecordableValue, as the step
    alone does) rather than call again; the steps before it are recorded, the answer is not."""

    def answer(request: dict[str, Any]) -> Any:
        return {"value": math.nan} if request["url"].endswith("/2") else {"url": request["url"]}

    main = [call("$ 1"), {"evaluate": {"x": 2}}, call("$ _.x"), call("$ 3")]
    calls, book = Calls(answer=answer), Book()
    outcome = await go_with(step_run(main), calls, book)
    assert outcome.unrecordable is not None and not outcome.handed_back
    assert "the output of main[2] contains NaN or Infinity" in outcome.unrecordable
    assert len(outcome.ran) == 2
    assert calls.urls == ["https://x.example/1", "https://x.example/2"]  # never the step after it
    assert steps_of(book.rows) == [0, 1]
    assert all(not math.isnan(a.answer.response.get("value", 0)) for a in book.answers)


class Postgres(Book):
    """A record that refuses, as the writer does (activities/transitions.py), what Postgres cannot store."""

    async def record(self, rows: list[TransitionRow], answers: list[RecordedAnswer]) -> None:
        for answer in answers:
            try:
                encode(dataclasses.asdict(answer.answer), Position("main", 0, "scope"))
            except UnrecordableValue as exc:
                raise ApplicationError(
                    f"could not record: {exc}", type="BadData", non_retryable=True
                ) from None
        await super().record(rows, answers)


async def test_a_call_whose_answer_the_store_refuses_still_fails_as_the_step_would():
    main = [call("$ 1"), {"evaluate": {"x": 2}}, call("$ _.x"), call("$ 3")]
    calls = Calls(answer=lambda r: {"v": "a\x00b"} if r["url"].endswith("/2") else {"url": r["url"]})
    book = Postgres()
    outcome = await go_with(step_run(main), calls, book)
    assert outcome.unrecordable is not None
    assert "the output of main[2] at v contains a NUL character" in outcome.unrecordable
    assert steps_of(book.rows) == [0, 1]  # the steps before it are recorded all the same


async def test_a_run_whose_outputs_grow_large_stops_after_the_call_that_made_them_so():
    def answer(request: dict[str, Any]) -> Any:
        return {"content": "x" * (MAX_BATCH_ANSWER_BYTES // 2 + 1)}

    main = [call("$ 1"), call("$ 2"), call("$ 3"), call("$ 4")]
    calls, book = Calls(answer=answer), Book()
    outcome = await go_with(step_run(main), calls, book)
    assert len(outcome.ran) == 2 and len(calls.requests) == 2
    assert steps_of(book.rows) == [0, 1] and len(book.answers) == 2


async def test_a_run_that_starts_mid_workflow_reads_the_frame_and_numbers_on_from_its_seq():
    run = step_run(CHAIN, count=3)
    run = dataclasses.replace(
        run,
        first=3,
        frame={**run.frame, "inputs": [{"start": 1}, {"n": 1}, {"url": "u"}, {"seen": "u"}]},
        labels={"first": {"input": {"start": 1}, "output": {"n": 5}}},
        state={"seen": "from before"},
    )
    calls, book = Calls(), Book()
    outcome = await go_with(run, calls, book)
    assert calls.urls == ["https://x.example/6"]  # steps['first'] is the label the workflow handed over
    assert outcome.ran[2].output["seen"] == "from before"
    assert steps_of(book.rows) == [3, 4, 5]
    assert [row["seq"] for row in book.rows] == [SEQ + 1, SEQ + 2, SEQ + 3]
