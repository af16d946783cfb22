"""Guardrails in the workflow (workflows/execution_guardrails.py): where they run, in which order, what a
trip writes, and what a prompt guardrail sends; the unit-level mirror of tests/test_guardrails.py."""

from __future__ import annotations

import json

from contracts.temporal import CALL_MODEL
from tests.unit.fakes import completion
from tests.unit.harness import task

STEP = {"evaluate": {"n": "$ _.n + 1"}}


def _check(name: str, check: str, message: str) -> dict[str, str]:
    return {"name": name, "check": check, "message": message}


async def test_input_guardrails_run_the_tasks_then_the_agents_before_the_first_step(mint):
    spec = task(STEP, guardrails={"input": [_check("task_limit", "$ _.n < 10", "task: {{ _.n }}")]})
    agent = {"guardrails": {"input": [_check("agent_limit", "$ _.n < 5", "agent: {{ _.n }}")]}}
    both = await mint.fail(spec, {"n": 20}, agent=agent)
    assert both.error == "InputGuardrailTripwire: task: 20"
    assert both.types == ["init", "error"]
    agents = await mint.fail(spec, {"n": 7}, agent=agent)
    assert agents.error == "InputGuardrailTripwire: agent: 7"
    assert agents.transitions[-1]["metadata"] == {
        "error_type": "InputGuardrailTripwire",
        "guardrail": "agent_limit",
    }
    passed = await mint.succeed(spec, {"n": 1}, agent=agent)
    assert passed.types == ["init", "step", "finish"] and passed.output == {"n": 2}


async def test_an_output_guardrail_checks_the_final_output_not_the_steps(mint):
    spec = task(STEP, STEP, guardrails={"output": [_check("at_most_2", "$ _.n <= 2", "too big")]})
    done = await mint.fail(spec, {"n": 1})  # the first step's output (2) passes; the last's (3) does not
    assert done.error == "OutputGuardrailTripwire: too big"
    assert done.types == ["init", "step", "step", "error"]


async def test_a_prompt_guardrail_asks_the_model_under_the_verdict_schema(mint):
    mint.fakes.model = lambda request: completion(json.dumps({"allowed": False, "reason": "not today"}))
    guardrail = {"name": "judge", "prompt": "May {{ _.who }} pass?", "model": "judge-model"}
    done = await mint.fail(task(STEP, guardrails={"input": [guardrail]}), {"n": 1, "who": "Ada"})
    assert done.error == "InputGuardrailTripwire: not today"
    (request,) = mint.fakes.requests(CALL_MODEL)
    assert request["model"] == "judge-model"
    assert request["messages"][-1] == {"role": "user", "content": "May Ada pass?"}
    assert request["response_format"]["json_schema"]["schema"]["properties"]["allowed"] == {"type": "boolean"}
    verdict = done.transitions[1]
    assert verdict["type"] == "step"
    assert verdict["output"] == {"guardrail": "judge", "allowed": False, "reason": "not today"}
    assert verdict["metadata"]["usage"]["prompt_tokens"] == 7
    assert done.row.prompt_tokens == 7  # the guardrail's tokens count toward the execution's usage


async def test_a_guardrail_check_that_fails_to_evaluate_fails_the_execution_plainly(mint):
    spec = task(STEP, guardrails={"input": [_check("bad", "$ _.missing > 1", "never")]})
    done = await mint.fail(spec, {"n": 1})
    assert "missing" in done.error and not done.error.startswith("InputGuardrailTripwire")
