"""Steps that call out: tool calls (function, api_call, system, MCP), prompts with their tool loop, and doc search,
checked by the requests the faked activities receive and the transitions written. The unit-level mirror of
the tool tests in tests/test_steps.py and of tests/test_prompts.py."""

from __future__ import annotations

import json

import pytest
from temporalio.exceptions import ApplicationError

from contracts.temporal import CALL_API, CALL_MCP, CALL_MODEL, CALL_SYSTEM, LIST_MCP_TOOLS, SEARCH_DOCS
from tests.unit.fakes import completion, http_response
from tests.unit.harness import AGENT, DEVELOPER, task

LOOKUP = {"name": "lookup", "type": "function", "function": {"parameters": {"type": "object"}}}
FETCH = {
    "name": "fetch",
    "type": "api_call",
    "api_call": {
        "method": "GET",
        "url": "https://api.example.com/items/{{arguments.id}}",
        "params": {"q": "{{arguments.q}}"},
        "headers": {"X-Test": "from-spec"},
    },
}

# where calls run ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "step, defaults, in_worker",
    [
        pytest.param({}, None, True, id="a call of 60 s or less runs in the worker"),
        pytest.param({"timeout": 30}, None, True, id="a shorter step timeout too"),
        pytest.param({"arguments": {"timeout": 120}}, None, False, id="a longer one is queued"),
        pytest.param({"arguments": {"timeout": 120}, "local": True}, None, True, id="unless the step says"),
        pytest.param({"local": False}, None, False, id="a step may queue a short one"),
        pytest.param({}, {"local": False}, False, id="so may the task's defaults"),
        pytest.param({"local": True}, {"local": False}, True, id="the step's own choice wins"),
    ],
)
async def test_where_a_call_runs_follows_its_timeout_unless_told(mint, step, defaults, in_worker):
    extra = {"defaults": defaults} if defaults else {}
    step = {"tool": "fetch", **step, "arguments": {"id": 1, "q": "x", **step.get("arguments", {})}}
    spec = task(step, tools=[FETCH], **extra)
    done = await mint.succeed(spec)
    assert done.output["status_code"] == 200
    assert len(mint.fakes.requests(CALL_API)) == 1
    assert mint.fakes.in_worker == ([CALL_API] if in_worker else [])


async def test_calls_in_the_worker_write_the_transitions_before_them_and_record_answers_in_order(mint):
    spec = task(*[{"tool": "fetch", "arguments": {"id": i, "q": "x"}} for i in range(5)], tools=[FETCH])
    done = await mint.succeed(spec)
    assert done.types == ["init"] + ["step"] * 5 + ["finish"]
    assert mint.fakes.in_worker == [CALL_API] * 5
    # each call after the first recorded the answer of the one before it
    assert len(mint.fakes.answers) == 4


# function tools --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(
            task(
                {"tool": {"name": "lookup", "arguments": {"q": '_["q"]', "limit": "3"}}},
                {"evaluate": {"answer": '_["answer"].upper()'}},
                tools=[LOOKUP],
            ),
            id="seed",
        ),
        pytest.param(
            task(
                {"tool": "lookup", "arguments": {"q": "$ _.q", "limit": 3}},
                {"evaluate": {"answer": "$ _.answer.upper()"}},
                tools=[LOOKUP],
            ),
            id="dollar",
        ),
    ],
)
async def test_a_function_tool_call_waits_for_the_client_and_its_answer_is_the_output(mint, spec):
    execution_id = await mint.start(spec, {"q": "mint"})
    waiting = await mint.until(execution_id, "wait")
    assert waiting.status == "awaiting_input"
    call = waiting.transitions[-1]["output"]["tool_call"]
    assert call == {"type": "function", "name": "lookup", "arguments": {"q": "mint", "limit": 3}}
    await mint.resume(execution_id, {"answer": "fresh"})
    done = await mint.finish(execution_id)
    assert done.output == {"answer": "FRESH"}
    assert done.step("main", 0)["output"] == {"answer": "fresh"}


async def test_a_tool_inherited_from_the_agent_can_be_called(mint):
    execution_id = await mint.start(task({"tool": "lookup", "arguments": {}}), agent_tools=[LOOKUP])
    waiting = await mint.until(execution_id, "wait")
    assert waiting.transitions[-1]["output"]["tool_call"]["name"] == "lookup"


# api_call tools --------------------------------------------------------------------------------------------


async def test_an_api_call_renders_its_request_from_the_arguments_and_outputs_the_response(mint):
    spec = task(
        {
            "tool": {
                "name": "fetch",
                "arguments": {"id": '_["id"]', "q": '"hello"', "params": {"extra": '"1"'}},
            }
        },
        {"evaluate": {"status": '_["status_code"]', "url": '_["json"]["url"]'}},
        tools=[FETCH],
    )
    done = await mint.succeed(spec, {"id": 7})
    assert done.output == {"status": 200, "url": "https://api.example.com/items/7"}
    (request,) = mint.fakes.requests(CALL_API)
    assert request["method"] == "GET" and request["url"] == "https://api.example.com/items/7"
    assert request["params"] == {"q": "hello", "extra": "1"}
    assert request["headers"]["X-Test"] == "from-spec" and request["headers"]["Idempotency-Key"]
    assert request["timeout"] == 60.0
    assert done.step("main", 0)["metadata"] == {"attempts": 1}


async def test_an_api_call_in_the_dollar_dialect_posts_json_built_from_expressions(mint):
    tool = {**FETCH, "api_call": {**FETCH["api_call"], "method": "POST"}}
    spec = task(
        {"tool": "fetch", "arguments": {"id": "$ _.id", "q": "literal", "json": {"total": "$ _.id * 2"}}},
        tools=[tool],
    )
    await mint.succeed(spec, {"id": 7})
    (request,) = mint.fakes.requests(CALL_API)
    assert request["method"] == "POST" and request["json"] == {"total": 14}
    assert request["params"] == {"q": "literal"}


async def test_a_whole_value_template_keeps_its_type(mint):
    tool = {
        "name": "count",
        "type": "api_call",
        "api_call": {"method": "POST", "url": "https://x.example", "json": {"n": "{{ arguments.n }}"}},
    }
    await mint.succeed(task({"tool": "count", "arguments": {"n": 5}}, tools=[tool]))
    assert mint.fakes.requests(CALL_API)[0]["json"] == {"n": 5}


async def test_x_tool_parameters_fill_in_what_the_step_leaves_out_and_the_step_wins(mint):
    metadata = {"x-tool-parameters": {"api_call:fetch": {"id": 42, "q": "fixed"}}}
    spec = task({"tool": "fetch", "arguments": {"q": "$ 'mine'"}}, tools=[FETCH], metadata=metadata)
    await mint.succeed(spec)
    (request,) = mint.fakes.requests(CALL_API)
    assert request["url"] == "https://api.example.com/items/42" and request["params"] == {"q": "mine"}


async def test_an_execution_metadatas_tool_parameters_win_over_the_tasks(mint):
    spec = task(
        {"tool": "fetch", "arguments": {"q": "x"}},
        tools=[FETCH],
        metadata={"x-tool-parameters": {"api_call:fetch": {"id": 1}}},
    )
    await mint.succeed(spec, metadata={"x-tool-parameters": {"api_call:fetch": {"id": 2}}})
    assert mint.fakes.requests(CALL_API)[0]["url"] == "https://api.example.com/items/2"


async def test_a_computed_timeout_over_the_limit_fails_the_step(mint):
    spec = task({"tool": "fetch", "arguments": {"id": 1, "q": "x", "timeout": "$ 10000"}}, tools=[FETCH])
    done = await mint.fail(spec)
    assert "timeout must be more than 0 and at most 300 seconds" in done.error
    assert mint.fakes.requests(CALL_API) == []


async def test_an_http_status_that_is_not_an_error_is_an_answer_the_task_sees(mint):
    mint.fakes.api = lambda request: http_response(404, {"detail": "no such item"})
    done = await mint.succeed(
        task(
            {"tool": "fetch", "arguments": {"id": 1, "q": "x"}},
            {"evaluate": {"s": "$ _.status_code"}},
            tools=[FETCH],
        )
    )
    assert done.output == {"s": 404}


async def test_a_permanent_error_is_not_retried(mint):
    def refuse(request):
        raise ApplicationError("refused", type="EgressRefused", non_retryable=True)

    mint.fakes.api = refuse
    done = await mint.fail(task({"tool": "fetch", "arguments": {"id": 1, "q": "x"}}, tools=[FETCH]))
    assert done.error == "EgressRefused: refused"
    assert len(mint.fakes.requests(CALL_API)) == 1


# system and MCP tools ----------------------------------------------------------------------------------------


async def test_a_system_tool_calls_mints_operation_as_the_executions_developer(mint):
    tool = {"name": "make_agent", "type": "system", "system": {"resource": "agent", "operation": "create"}}
    mint.fakes.system = lambda request: {"id": "new-agent", "name": request["arguments"]["name"]}
    done = await mint.succeed(task({"tool": "make_agent", "arguments": {"name": "$ 'helper'"}}, tools=[tool]))
    assert done.output == {"id": "new-agent", "name": "helper"}
    (request,) = mint.fakes.requests(CALL_SYSTEM)
    assert request == {
        "developer_id": DEVELOPER,
        "system": {"resource": "agent", "operation": "create"},
        "arguments": {"name": "helper"},
    }


async def test_an_mcp_tool_calls_its_servers_method(mint):
    tool = {
        "name": "add",
        "type": "integration",
        "integration": {"provider": "mcp", "method": "plus", "setup": {"server": "calc"}},
    }
    mint.fakes.mcp = lambda request: {"sum": request["arguments"]["a"] + request["arguments"]["b"]}
    done = await mint.succeed(task({"tool": "add", "arguments": {"a": 2, "b": 3}}, tools=[tool]))
    assert done.output == {"sum": 5}
    (request,) = mint.fakes.requests(CALL_MCP)
    assert request["tool"] == "plus" and request["integration"]["setup"] == {"server": "calc"}


async def test_an_integration_call_without_an_argument_its_method_needs_fails_saying_so(mint):
    # (An unknown argument or provider is refused when the task is created: tests/test_integrations.py.)
    tool = {"name": "weather", "type": "integration", "integration": {"provider": "weather"}}
    done = await mint.fail(task({"tool": "weather", "arguments": {}}, tools=[tool]))
    assert "provider 'weather', method 'get' needs the argument location" in done.error


# prompts ---------------------------------------------------------------------------------------------------


async def test_a_prompt_answers_with_a_chat_completion_readable_both_ways(mint):
    spec = task(
        {"evaluate": {"who": "$ 'Ada'"}},
        {
            "prompt": [
                {"role": "system", "content": "You are {{agent.name}}."},
                {"role": "user", "content": "Greet {{_.who}}"},
            ],
            "settings": {"temperature": 0.2},
        },
        {"evaluate": {"seed_form": '$ _["choices"][0].content', "usual": "$ _.choices[0].message.content"}},
    )
    done = await mint.succeed(spec)
    assert done.output == {"seed_form": "echo: Greet Ada", "usual": "echo: Greet Ada"}
    (request,) = mint.fakes.requests(CALL_MODEL)
    assert request["messages"] == [
        {"role": "system", "content": "You are tester."},
        {"role": "user", "content": "Greet Ada"},
    ]
    assert request["model"] == AGENT["model"] and request["settings"] == {"temperature": 0.2}
    # The execution's id too: whose budget the call counts against.
    assert request["owner"] == {"developer_id": DEVELOPER, "agent_id": AGENT["id"], "execution_id": done.id}
    prompted = done.step("main", 1)
    assert prompted["output"]["choices"][0]["finish_reason"] == "stop"
    assert prompted["metadata"]["usage"]["prompt_tokens"] == 7
    assert done.row.prompt_tokens == 7 and done.row.completion_tokens == 3


async def test_unwrap_returns_the_text_and_settings_go_step_over_task_over_agent(mint):
    agent = {"default_settings": {"temperature": 0.9, "max_tokens": 10, "top_p": 0.5}}
    spec = task(
        {"prompt": "hi", "unwrap": True, "settings": {"temperature": 0.1, "model": "other-model"}},
        defaults={"settings": {"temperature": 0.5, "max_tokens": 20}},
    )
    done = await mint.succeed(spec, agent=agent)
    assert done.output == "echo: hi"
    (request,) = mint.fakes.requests(CALL_MODEL)
    assert request["settings"] == {"temperature": 0.1, "max_tokens": 20, "top_p": 0.5}
    assert request["model"] == "other-model"


async def test_a_json_answer_asked_for_is_parsed_when_unwrapped(mint):
    mint.fakes.model = lambda request: completion('```json\n{"score": 3}\n```')
    spec = task({"prompt": "rate", "unwrap": True, "settings": {"response_format": {"type": "json_object"}}})
    done = await mint.succeed(spec)
    assert done.output == {"score": 3}
    assert mint.fakes.requests(CALL_MODEL)[0]["response_format"] == {"type": "json_object"}


async def test_an_answer_that_is_not_the_json_asked_for_fails_the_step(mint):
    mint.fakes.model = lambda request: completion("not json")
    spec = task({"prompt": "rate", "unwrap": True, "settings": {"response_format": {"type": "json_object"}}})
    done = await mint.fail(spec)
    assert done.error == "DecodeError: main[0]: the model's answer is not the JSON that was asked for"
    assert done.transitions[-1]["metadata"] == {"error_type": "DecodeError"}


CALC = {
    "name": "length",
    "type": "api_call",
    "api_call": {"method": "POST", "url": "https://calc.example/length", "json": {"s": "{{ arguments.s }}"}},
}


def tool_loop(request):
    """Asks for `length` once, then answers with what it returned."""
    results = [json.loads(m["content"]) for m in request["messages"] if m["role"] == "tool"]
    if not results:
        return completion(tool_calls=[("length", {"s": "abcde"})])
    result = results[0]
    said = result["data"]["json"]["length"] if result["status"] == "success" else result["error"]["code"]
    return completion(f"tool said {result['status']}: {said}")


async def test_auto_run_tools_runs_the_tool_the_model_asks_for_and_asks_again(mint):
    mint.fakes.model = tool_loop
    mint.fakes.api = lambda request: http_response(200, {"length": len(request["json"]["s"])})
    spec = task({"prompt": "how long?", "tools": "all", "auto_run_tools": True, "unwrap": True}, tools=[CALC])
    done = await mint.succeed(spec)
    assert done.output == "tool said success: 5"
    first, second = mint.fakes.requests(CALL_MODEL)
    assert [t["function"]["name"] for t in first["tools"]] == ["length"]
    assert second["messages"][-2]["tool_calls"][0]["function"]["name"] == "length"
    assert second["messages"][-1]["role"] == "tool" and second["messages"][-1]["tool_call_id"] == "call_0"
    loop = [
        (t["metadata"].get("call"), t["metadata"].get("tool"), t["metadata"].get("turn"))
        for t in done.of_type("step")
    ]
    assert loop == [("model", None, 1), ("tool", "length", 1), (None, None, None)]
    assert done.of_type("step")[1]["output"]["result"]["status"] == "success"


async def test_without_auto_run_the_prompt_returns_the_tool_calls(mint):
    mint.fakes.model = lambda request: completion(tool_calls=[("length", {"s": "xy"})])
    spec = task(
        {"prompt": "?", "tools": ["length"]},
        {"evaluate": {"calls": "$ _.choices[0].tool_calls"}},
        tools=[CALC],
    )
    done = await mint.succeed(spec)
    (call,) = done.output["calls"]
    assert call["function"]["name"] == "length" and json.loads(call["function"]["arguments"]) == {"s": "xy"}
    assert mint.fakes.requests(CALL_API) == []


async def test_a_failing_tool_goes_back_to_the_model_as_an_error_result(mint):
    def down(request):
        raise ApplicationError("https://calc.example/length answered 503", type="HttpUnavailable")

    mint.fakes.model, mint.fakes.api = tool_loop, down
    step = {
        "prompt": "go",
        "tools": "all",
        "auto_run_tools": True,
        "unwrap": True,
        "retry": {"max_attempts": 1},
    }
    done = await mint.succeed(task(step, tools=[CALC]))
    assert done.output == "tool said error: HttpUnavailable"


async def test_a_failing_tool_that_says_on_error_fail_fails_the_step(mint):
    def down(request):
        raise ApplicationError("https://calc.example/length answered 503", type="HttpUnavailable")

    mint.fakes.model, mint.fakes.api = tool_loop, down
    step = {"prompt": "go", "tools": "all", "auto_run_tools": True, "retry": {"max_attempts": 1}}
    done = await mint.fail(task(step, tools=[{**CALC, "on_error": "fail"}]))
    assert "503" in done.error


async def test_max_turns_ends_a_loop_that_never_answers(mint):
    mint.fakes.model = lambda request: completion(tool_calls=[("length", {"s": "again"})])
    spec = task({"prompt": "?", "tools": "all", "auto_run_tools": True, "max_turns": 2}, tools=[CALC])
    done = await mint.fail(spec)
    assert done.error.startswith("MaxTurnsExceeded: ") and "2 turns" in done.error
    assert done.transitions[-1]["metadata"]["error_type"] == "MaxTurnsExceeded"
    assert len(mint.fakes.requests(CALL_MODEL)) == 3


async def test_a_function_tool_in_the_loop_is_answered_by_the_client(mint):
    def model(request):
        results = [json.loads(m["content"]) for m in request["messages"] if m["role"] == "tool"]
        if not results:
            return completion(tool_calls=[("lookup", {"customer": "c-1"})])
        return completion(f"status: {results[0]['data']['status']}")

    mint.fakes.model = model
    spec = task(
        {"prompt": "How is c-1?", "tools": "all", "auto_run_tools": True, "unwrap": True}, tools=[LOOKUP]
    )
    execution_id = await mint.start(spec)
    waiting = await mint.until(execution_id, "wait")
    call = waiting.transitions[-1]["output"]["tool_call"]
    assert call == {"type": "function", "name": "lookup", "arguments": {"customer": "c-1"}, "id": "call_0"}
    await mint.resume(execution_id, {"status": "active"})
    assert (await mint.finish(execution_id)).output == "status: active"


async def test_an_mcp_tool_in_a_prompt_is_described_by_its_server(mint):
    mint.fakes.mcp_tools = [
        {"name": "plus", "description": "adds", "parameters": {"type": "object", "properties": {"a": {}}}}
    ]
    tool = {
        "name": "add",
        "type": "integration",
        "integration": {"provider": "mcp", "method": "plus", "setup": {"server": "calc"}},
    }
    await mint.succeed(task({"prompt": "?", "tools": "all"}, tools=[tool]))
    assert len(mint.fakes.requests(LIST_MCP_TOOLS)) == 1
    (offered,) = mint.fakes.requests(CALL_MODEL)[0]["tools"]
    assert offered["function"] == {
        "name": "add",
        "description": "adds",
        "parameters": {"type": "object", "properties": {"a": {}}},
    }


async def test_fixed_tool_parameters_are_hidden_from_the_model(mint):
    tool = {
        **CALC,
        "api_call": {
            **CALC["api_call"],
            "params_schema": {
                "type": "object",
                "properties": {"s": {}, "unit": {}},
                "required": ["s", "unit"],
            },
        },
    }
    spec = task(
        {"prompt": "?", "tools": "all"}, tools=[tool], metadata={"x-tool-parameters": {"unit": "chars"}}
    )
    await mint.succeed(spec)
    parameters = mint.fakes.requests(CALL_MODEL)[0]["tools"][0]["function"]["parameters"]
    assert parameters["properties"] == {"s": {}} and parameters["required"] == ["s"]


# search ----------------------------------------------------------------------------------------------------


async def test_search_asks_for_the_agents_docs_and_outputs_what_was_found(mint):
    mint.fakes.docs = lambda request: [{"id": "d1", "snippet": {"content": request["text"]}}]
    spec = task({"search": {"query": "$ _.q", "mode": "text", "limit": 3}})
    done = await mint.succeed(spec, {"q": "durable"})
    assert done.output == {"docs": [{"id": "d1", "snippet": {"content": "durable"}}]}
    (request,) = mint.fakes.requests(SEARCH_DOCS)
    assert request["owner_ids"] == [AGENT["id"]] and request["developer_id"] == DEVELOPER
    assert (request["mode"], request["limit"], request["alpha"]) == ("text", 3, 0.5)


async def test_search_includes_a_users_docs_when_given(mint):
    await mint.succeed(task({"search": {"query": "$ 'x'", "user": "$ 'user-1'"}}))
    assert mint.fakes.requests(SEARCH_DOCS)[0]["owner_ids"] == [AGENT["id"], "user-1"]


async def test_a_search_with_an_empty_query_fails_the_step(mint):
    done = await mint.fail(task({"search": {"query": "$ '  '"}}))
    assert done.error == "StepFailed: search query must be non-empty text, got '  '"
