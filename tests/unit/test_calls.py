"""Call planning (workflows/calls.py): each attempt's timeout and retry policy, the api_call request a tool
call becomes, and the activity each kind of server-side tool goes to."""

from __future__ import annotations

import random
from datetime import timedelta
from itertools import count

import pytest

from contracts.calls import McpCallRequest, Owner, SystemCallRequest
from contracts.temporal import CALL_API, CALL_INTEGRATION, CALL_MCP, CALL_SYSTEM
from workflows import language as lang
from workflows.calls import ToolError, bounded_timeout, call_options, tool_activity
from workflows.secret_refs import reference
from workflows.tool_kinds import parse_tool
from workflows.values import ValueEvaluator

OWNER = Owner(developer_id="dev", agent_id="agent")


def values() -> ValueEvaluator:
    evaluator = ValueEvaluator("dollar", random.Random(1))
    evaluator.budget.start_step(cpu_guard=False)
    return evaluator


def plan(tool: dict, arguments: object = None, max_timeout: float = 300):
    keys = (f"key-{i}" for i in count(1))
    return tool_activity(
        parse_tool(tool),
        {} if arguments is None else arguments,
        OWNER,
        values(),
        lambda: next(keys),
        max_timeout,
    )


def api_tool(**spec) -> dict:
    return {
        "name": "f",
        "type": "api_call",
        "api_call": {"method": "GET", "url": "https://x.example", **spec},
    }


# timeouts and retries ------------------------------------------------------------------------------------


def test_without_step_or_task_values_a_call_has_60_s_per_attempt_and_5_attempts_doubling_from_1_s():
    timeout, retry = call_options(lang.ToolCallStep(tool="t"), None)
    assert timeout == timedelta(seconds=60)
    assert (
        retry.maximum_attempts,
        retry.initial_interval,
        retry.backoff_coefficient,
        retry.maximum_interval,
    ) == (
        5,
        timedelta(seconds=1),
        2.0,
        timedelta(seconds=60),
    )


def test_the_steps_values_win_over_the_tasks_defaults_field_by_field():
    step = lang.ToolCallStep(tool="t", timeout=5, retry=lang.RetrySpec(max_attempts=2))
    defaults = lang.StepDefaults(
        timeout=9, retry=lang.RetrySpec(backoff=3, max_attempts=9, non_retryable=["X"])
    )
    timeout, retry = call_options(step, defaults)
    assert timeout == timedelta(seconds=5)
    assert (retry.maximum_attempts, retry.backoff_coefficient, retry.non_retryable_error_types) == (
        2,
        3.0,
        ["X"],
    )


def test_an_api_calls_own_deadline_bounds_each_attempt_with_a_little_slack():
    # The slack (5 s) and the wait for a place of its developer's in the worker (30 s)
    assert call_options(lang.ToolCallStep(tool="t"), None, deadline=10)[0] == timedelta(seconds=45)
    assert call_options(lang.ToolCallStep(tool="t", timeout=3), None, deadline=10)[0] == timedelta(seconds=3)


@pytest.mark.parametrize(("raw", "seconds"), [(None, 60.0), (5, 5.0), ("5", 5.0), (300, 300.0)])
def test_an_api_call_timeout_is_a_number_of_seconds_up_to_the_limit(raw, seconds):
    assert bounded_timeout(raw, 300) == seconds


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (0, "timeout must be more than 0 and at most 300 seconds (MINT_MAX_TOOL_TIMEOUT_SECONDS), not 0"),
        (301, "timeout must be more than 0 and at most 300 seconds (MINT_MAX_TOOL_TIMEOUT_SECONDS), not 301"),
        (
            float("nan"),
            "timeout must be more than 0 and at most 300 seconds (MINT_MAX_TOOL_TIMEOUT_SECONDS), not nan",
        ),
        ("soon", "timeout must be a number of seconds, not 'soon'"),
        (True, "timeout must be a number of seconds, not True"),
    ],
)
def test_any_other_timeout_is_refused_saying_why(raw, message):
    with pytest.raises(ValueError) as refused:
        bounded_timeout(raw, 300)
    assert str(refused.value) == message


# api_call requests ---------------------------------------------------------------------------------------


def test_an_api_calls_strings_are_templates_over_its_arguments():
    planned = plan(
        api_tool(url="https://x.example/items/{{ arguments.id }}", params={"q": "{{ _.q }}"}),
        {"id": 3, "q": "a"},
    )
    assert planned.name == CALL_API
    assert planned.request["url"] == "https://x.example/items/3" and planned.request["params"] == {"q": "a"}


def test_the_steps_arguments_override_and_extend_the_spec():
    tool = api_tool(headers={"X-A": "spec", "X-B": "spec"}, params={"a": "1"})
    planned = plan(
        tool, {"method": "POST", "headers": {"X-B": "step"}, "params": {"b": "2"}, "json": {"k": 1}}
    )
    request = planned.request
    assert request["method"] == "POST" and request["json"] == {"k": 1}
    assert request["params"] == {"a": "1", "b": "2"}
    assert {k: v for k, v in request["headers"].items() if k != "Idempotency-Key"} == {
        "X-A": "spec",
        "X-B": "step",
    }


def test_a_whole_value_template_keeps_its_type():
    assert plan(api_tool(json={"n": "{{ arguments.n }}"}), {"n": 5}).request["json"] == {"n": 5}


def test_every_call_gets_an_idempotency_key_unless_it_sets_its_own():
    assert plan(api_tool()).request["headers"]["Idempotency-Key"] == "key-2"  # key-1 is the secrets' nonce
    own = plan(api_tool(headers={"idempotency-key": "mine"})).request["headers"]
    assert own == {"idempotency-key": "mine"}


def test_the_timeout_is_the_deadline_of_the_whole_call():
    planned = plan(api_tool(timeout=12))
    assert planned.request["timeout"] == planned.deadline == 12.0
    with pytest.raises(
        ToolError, match="api_call tool 'f': timeout must be more than 0 and at most 10 seconds"
    ):
        plan(api_tool(), {"timeout": 11}, max_timeout=10)


def test_a_secret_travels_as_a_reference_with_whose_secrets_it_may_use():
    planned = plan(api_tool(headers={"Authorization": "Bearer {{ secrets.KEY }}"}))
    assert "KEY" in planned.request["headers"]["Authorization"]
    assert planned.request["secrets"] == {"developer_id": "dev", "agent_id": "agent", "nonce": "key-1"}


def test_a_secret_changed_before_use_is_refused():
    with pytest.raises(ToolError, match="changes a secret before using it"):
        plan(api_tool(headers={"A": "{{ secrets.KEY | upper }}"}))


def test_arguments_that_are_not_a_mapping_are_refused():
    with pytest.raises(ToolError, match="arguments for api_call tool 'f' must be a mapping"):
        plan(api_tool(), [1])


# other tools ---------------------------------------------------------------------------------------------


def test_a_system_tool_goes_to_call_system_as_the_owners_developer():
    tool = {"name": "s", "type": "system", "system": {"resource": "agent", "operation": "list"}}
    planned = plan(tool, {"limit": 5})
    assert (planned.name, planned.deadline) == (CALL_SYSTEM, None)
    assert planned.request == SystemCallRequest(
        developer_id="dev", system=tool["system"], arguments={"limit": 5}
    )


def test_an_mcp_tool_goes_to_call_mcp_with_its_method_or_its_name():
    integration = {"provider": "mcp", "setup": {"server": "calc"}}
    planned = plan({"name": "add", "type": "integration", "integration": integration}, {"a": 1})
    assert planned.name == CALL_MCP
    assert planned.request == McpCallRequest(integration=integration, tool="add", arguments={"a": 1})


def test_an_integration_provider_mint_does_not_ship_is_refused():
    with pytest.raises(ToolError, match="provider 'duckduckgo' is not available"):
        plan({"name": "b", "type": "integration", "integration": {"provider": "duckduckgo"}})


def test_an_integration_provider_goes_to_call_integration_with_secret_references():
    tool = {
        "name": "b",
        "type": "integration",
        "integration": {"provider": "brave", "setup": {"brave_api_key": "secrets.BRAVE"}},
    }
    planned = plan(tool, {"query": "mint"})
    assert (planned.name, planned.deadline) == (CALL_INTEGRATION, 60)
    request = planned.request
    assert (request.provider, request.method, request.arguments) == ("brave", "search", {"query": "mint"})
    assert request.setup["brave_api_key"] == reference("key-1", "BRAVE")
    assert request.secrets == {"developer_id": "dev", "agent_id": OWNER.agent_id, "nonce": "key-1"}


def test_a_history_from_before_the_providers_still_refuses_them():
    keys = (f"key-{i}" for i in count(1))
    tool = {"name": "b", "type": "integration", "integration": {"provider": "brave"}}
    with pytest.raises(ToolError, match="provider 'brave' is not available"):
        tool_activity(
            parse_tool(tool), {"query": "x"}, OWNER, values(), lambda: next(keys), 300, lambda _: False
        )
