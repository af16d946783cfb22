"""Pass by reference (workflows/references.py): which variables fit which parameters, what the model is
offered and reads, and what a tool receives. Pure functions; the HTTP-level tests are tests/test_references.py."""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

import pytest

from contracts.temporal import CALL_API, CALL_MODEL
from expressions.budget import (
    CHARS_PER_UNIT,
    MAX_ELEMENTS,
    MAX_STRING_LENGTH,
    SCANS_PER_UNIT,
    STEP_BUDGET,
    Budget,
)
from expressions.data import counted
from tests.unit.fakes import completion, http_response
from tests.unit.harness import task
from workflows.references import (
    DEFAULT_THRESHOLD,
    BadReference,
    ReferenceSettings,
    ReferencesTooLarge,
    Variables,
    fits,
    setting_problems,
    split_settings,
)
from workflows.values import MAX_RESULT_DEPTH

PAGE = "x" * 5000


def _tool(name: str, properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    parameters = {"type": "object", "properties": properties, "required": required or list(properties)}
    return {"type": "function", "function": {"name": name, "description": "", "parameters": parameters}}


SUMMARISE = _tool("summarise", {"text": {"type": "string", "x-by-reference": True}})
SEARCH = _tool("search", {"query": {"type": "string", "description": "what to look for"}})
COUNT = _tool("count", {"items": {"type": "array"}, "limit": {"type": "integer"}}, required=["items"])


def _variables(**values: Any) -> Variables:
    return Variables(threshold=100, values=dict(values))


# settings ------------------------------------------------------------------------------------------------


def test_settings_are_taken_out_of_what_the_model_is_sent():
    found, rest = split_settings({"pass_by_reference": True, "reference_threshold": 50, "temperature": 0})
    assert found == ReferenceSettings(True, 50) and rest == {"temperature": 0}
    assert split_settings({"temperature": 0}) == (
        ReferenceSettings(False, DEFAULT_THRESHOLD),
        {"temperature": 0},
    )


def test_bad_settings_are_named_and_read_as_the_defaults_in_a_run():
    problems = setting_problems({"pass_by_reference": "yes", "reference_threshold": 0})
    assert problems == [
        "`pass_by_reference` must be true or false",
        "`reference_threshold` must be a whole number of characters, at least 1",
    ]
    assert setting_problems({"reference_threshold": True}) != []
    assert setting_problems({"pass_by_reference": False, "reference_threshold": 10}) == []
    assert split_settings({"pass_by_reference": "yes", "reference_threshold": -1})[0] == ReferenceSettings()


# types ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "schema, value, fit",
    [
        ({"type": "string"}, "a", True),
        ({"type": "string"}, 1, False),
        ({"type": "number"}, 1, True),  # an integer is a number
        ({"type": "integer"}, 1.5, False),
        ({"type": "integer"}, True, False),  # a boolean is no integer
        ({"type": ["string", "null"]}, None, True),
        ({"type": "object"}, {"a": 1}, True),
        ({"type": "array"}, {"a": 1}, False),
        ({"enum": ["c", "f"]}, "k", False),
        ({"anyOf": [{"type": "integer"}, {"type": "array"}]}, [1], True),
        ({"anyOf": [{"type": "integer"}, {"type": "array"}]}, "s", False),
        ({}, {"anything": True}, True),
    ],
)
def test_a_variable_fits_a_parameter_by_json_type(schema, value, fit):
    assert fits(schema, value) is fit


# what the model is offered -------------------------------------------------------------------------------


def test_a_by_reference_tool_is_offered_only_while_a_variable_fits_its_parameter():
    assert [t["function"]["name"] for t in _variables().offer([SUMMARISE, SEARCH])] == ["search"]
    assert [t["function"]["name"] for t in _variables(n=3).offer([SUMMARISE, SEARCH])] == ["search"]
    (summarise, search) = _variables(page=PAGE, n=3).offer([SUMMARISE, SEARCH])
    text = summarise["function"]["parameters"]["properties"]["text"]
    assert text["enum"] == ["<<var:page>>"] and text["type"] == "string"
    assert "x-by-reference" not in json.dumps(summarise)
    # A parameter that also takes a literal offers the references that fit it besides its own schema.
    query = search["function"]["parameters"]["properties"]["query"]
    assert query["description"] == "what to look for"
    assert query["anyOf"][0] == {"type": "string"}
    assert query["anyOf"][1]["enum"] == ["<<var:page>>"]
    assert "'<<var:name>>'" in query["anyOf"][1]["description"]


def test_a_parameter_no_variable_fits_is_offered_as_it_is():
    (count,) = _variables(page=PAGE).offer([COUNT])
    assert count == COUNT


def test_an_optional_by_reference_parameter_is_hidden_until_a_variable_fits():
    tool = _tool(
        "save", {"name": {"type": "string"}, "blob": {"type": "object", "x-by-reference": True}}, ["name"]
    )
    (offered,) = _variables().offer([tool])
    assert set(offered["function"]["parameters"]["properties"]) == {"name"}
    (offered,) = _variables(doc={"a": 1}).offer([tool])
    assert offered["function"]["parameters"]["properties"]["blob"]["enum"] == ["<<var:doc>>"]


# what the model reads ------------------------------------------------------------------------------------


def test_a_large_result_becomes_a_variable_and_the_model_reads_a_preview():
    variables = _variables()
    result = {"status": "success", "duration_ms": 3, "data": PAGE}
    shown, name = variables.keep("fetch-page", result)
    assert name == "fetch_page_1" and variables.values[name] == PAGE
    assert shown["status"] == "success" and shown["duration_ms"] == 3
    assert shown["data"]["reference"] == "<<var:fetch_page_1>>"
    assert shown["data"]["type"] == "string" and shown["data"]["size"] == 5000
    assert len(json.dumps(shown)) < 600
    _, second = variables.keep("fetch-page", {"status": "success", "data": {"rows": [PAGE]}})
    assert second == "fetch_page_2"


def test_small_results_and_errors_are_read_as_they_are():
    variables = _variables()
    small = {"status": "success", "data": "short"}
    failed = {"status": "error", "error": {"code": "x", "message": PAGE}}
    assert variables.keep("t", small) == (small, None)
    assert variables.keep("t", failed) == (failed, None)
    assert variables.values == {}


def test_the_tasks_state_values_are_variables_from_the_start():
    variables = Variables.start(ReferenceSettings(True, 10), {"report": "r", "not a name": 1})
    assert variables.values == {"report": "r"} and variables.threshold == 10


# what the tool receives ----------------------------------------------------------------------------------


def test_references_are_replaced_by_their_values():
    variables = _variables(page=PAGE, rows=[1, 2])
    schema = COUNT["function"]["parameters"]
    assert variables.resolve(schema, {"items": "<<var:rows>>", "limit": 2}) == {"items": [1, 2], "limit": 2}
    # Whole references deeper in an argument become values; references inside text become text.
    resolved = variables.resolve({}, {"body": {"text": "<<var:page>>", "note": "rows: <<var:rows>>!"}})
    assert resolved == {"body": {"text": PAGE, "note": "rows: [1, 2]!"}}
    assert variables.resolve({}, {"q": "plain"}) == {"q": "plain"}


def test_an_unknown_reference_names_the_variables_there_are():
    variables = _variables(page=PAGE, rows=[1, 2])
    with pytest.raises(BadReference) as raised:
        variables.resolve({}, {"text": "<<var:pgae>>"})
    assert str(raised.value) == (
        "argument 'text': there is no variable 'pgae'; variables: page (string), rows (array)"
    )
    with pytest.raises(BadReference, match="no variable 'nope'"):
        variables.resolve({}, {"text": "see <<var:nope>>"})


def test_a_reference_that_does_not_fit_its_parameter_is_refused():
    variables = _variables(page=PAGE, rows=[1, 2])
    with pytest.raises(BadReference) as raised:
        variables.resolve(COUNT["function"]["parameters"], {"items": "<<var:page>>"})
    assert "variable 'page' is string, which does not fit the parameter (type array)" in str(raised.value)
    assert "variables that fit: rows (array)" in str(raised.value)


def test_a_by_reference_parameter_takes_no_literal():
    with pytest.raises(BadReference) as raised:
        _variables(page=PAGE).resolve(SUMMARISE["function"]["parameters"], {"text": "the whole text"})
    assert "argument 'text' takes a variable by reference only" in str(raised.value)
    assert "variables that fit: page (string)" in str(raised.value)


# in a workflow (the faked activities of tests/unit/fakes.py) ------------------------------------------------

FETCH = {"name": "fetch", "type": "api_call", "api_call": {"url": "https://site.example/page"}}
POST = {
    "name": "post",
    "type": "api_call",
    "api_call": {
        "method": "POST",
        "url": "https://site.example/post",
        "json": {"text": "{{ arguments.page.json.text }}", "note": "{{ arguments.note }}"},
        "params_schema": {
            "type": "object",
            "properties": {"page": {"type": "object", "x-by-reference": True}, "note": {"type": "string"}},
            "required": ["page"],
        },
    },
}


def _fetch_then_post(request: dict[str, Any]) -> dict[str, Any]:
    results = [json.loads(m["content"]) for m in request["messages"] if m["role"] == "tool"]
    if not results:
        return completion(tool_calls=[("fetch", {})])
    if len(results) == 1:
        reference = results[0]["data"]["reference"]
        return completion(tool_calls=[("post", {"page": reference, "note": "from <<var:who>>"})])
    return completion("posted")


async def test_a_prompt_step_passes_a_fetched_page_and_a_state_value_by_reference(mint):
    mint.fakes.model = _fetch_then_post
    mint.fakes.api = lambda request: http_response(
        200, {"text": PAGE} if request["url"].endswith("page") else {}
    )
    step = {
        "prompt": "post the page",
        "tools": "all",
        "auto_run_tools": True,
        "unwrap": True,
        "settings": {"pass_by_reference": True, "temperature": 0},
    }
    done = await mint.succeed(task({"set": {"who": "ada"}}, step, tools=[FETCH, POST]))
    assert done.output == "posted"
    first, second, _ = mint.fakes.requests(CALL_MODEL)
    assert first["settings"] == {"temperature": 0}  # Mint's own settings are not the model's
    assert [t["function"]["name"] for t in first["tools"]] == ["fetch"]
    assert [t["function"]["name"] for t in second["tools"]] == ["fetch", "post"]
    assert PAGE not in second["messages"][-1]["content"]
    posted = mint.fakes.requests(CALL_API)[1]
    assert posted["json"] == {"text": PAGE, "note": "from ada"}
    fetched = done.of_type("step")[2]["output"]
    assert fetched["variable"] == "fetch_1" and fetched["result"]["data"]["json"] == {"text": PAGE}


# bounded before it is built -------------------------------------------------------------------------------

BIG = "x" * 500_000  # 62,501 elements as bounded_size counts them: 16 of them pass MAX_ELEMENTS
LIST = _tool("post", {"pages": {"type": "array"}})["function"]["parameters"]


def _bounded(**values: Any) -> Variables:
    return Variables(threshold=100, values=dict(values), budget=Budget())


def _sandbox_accepts(value: Any) -> bool:
    """Whether the sandbox would hold `value`: bounded_size's count, shared parts counted each time."""
    return counted(value) <= MAX_ELEMENTS


def test_many_references_to_one_big_value_are_refused_before_anything_is_built():
    variables = _bounded(page=BIG)
    tracemalloc.start()
    try:
        with pytest.raises(ReferencesTooLarge) as raised:
            variables.resolve(LIST, {"pages": ["<<var:page>>"] * 200})  # 100 MB, were it built
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000  # not the value, nor a copy of the variable
    message = str(raised.value)
    assert message.startswith("LimitExceeded: argument 'pages': ")
    assert f"over {MAX_ELEMENTS} elements" in message and "each counts its variable's whole size" in message
    assert variables.budget is not None and variables.budget.left == STEP_BUDGET  # refused: nothing charged


@pytest.mark.parametrize("count", [15, 16])
def test_references_are_held_to_the_limit_any_value_has_just_under_passes(count):
    built = {"pages": [BIG] * count}
    variables = _bounded(page=BIG)
    if _sandbox_accepts(built):
        assert variables.resolve(LIST, {"pages": ["<<var:page>>"] * count}) == built
    else:
        with pytest.raises(ReferencesTooLarge):
            variables.resolve(LIST, {"pages": ["<<var:page>>"] * count})
    assert _sandbox_accepts(built) is (count == 15)  # the two cases are one each side of the limit


def test_nested_references_count_wherever_they_are():
    variables = _bounded(page=BIG, small="s")
    arguments = {"a": {"b": [{"c": "<<var:page>>", "d": ["<<var:page>>"] * 3}] * 4}, "e": "<<var:small>>"}
    with pytest.raises(ReferencesTooLarge, match="argument 'a'"):
        variables.resolve({}, arguments)  # 16 references, 4 levels down
    # A variable's value is not searched for references: one that holds reference text is only that text.
    holder = _bounded(page=BIG, refs="<<var:page>>" * 1000)
    assert holder.resolve({}, {"t": "<<var:refs>>"}) == {"t": "<<var:page>>" * 1000}


def test_a_variable_built_by_an_expression_counts_every_repeat_of_what_it_shares():
    # 200 references to one string (an expression's result may no longer be this; a variable from elsewhere can)
    rows = [BIG] * 200
    nested = {"a": [BIG] * 10, "b": [BIG] * 10}
    variables = Variables.start(ReferenceSettings(True, 100), {"rows": rows, "nested": nested}, Budget())
    with pytest.raises(ReferencesTooLarge, match="argument 'rows'"):
        variables.resolve({}, {"rows": "<<var:rows>>"})
    with pytest.raises(ReferencesTooLarge, match="argument 'x'"):
        variables.resolve({}, {"x": ["<<var:nested>>"]})
    with pytest.raises(ReferencesTooLarge, match="too large to write as text"):
        variables.resolve({}, {"note": "rows: <<var:rows>>"})  # never written out to find its length


def test_references_inside_text_are_held_to_the_longest_string():
    head = "page: "
    fits = "y" * (MAX_STRING_LENGTH - len(head))
    variables = _bounded(page=BIG, fits=fits)
    assert variables.resolve({}, {"t": head + "<<var:fits>>"}) == {"t": head + fits}
    with pytest.raises(ReferencesTooLarge) as raised:
        variables.resolve({}, {"t": head + "<<var:fits>>!"})
    assert f"longer than {MAX_STRING_LENGTH} characters" in str(raised.value)
    with pytest.raises(ReferencesTooLarge, match="argument 't': with its 3 references"):
        variables.resolve({}, {"t": "<<var:page>> " * 3})


def test_references_are_held_to_the_nesting_any_value_may_have():
    deep: Any = "bottom"
    for _ in range(MAX_RESULT_DEPTH - 1):
        deep = [deep]
    variables = _bounded(deep=deep)
    assert variables.resolve({}, {"d": "<<var:deep>>"}) == {"d": deep}  # the arguments are one level more
    with pytest.raises(ReferencesTooLarge, match=f"more than {MAX_RESULT_DEPTH} levels deep"):
        variables.resolve({}, {"d": ["<<var:deep>>"]})


def test_filling_references_in_is_charged_to_the_steps_budget():
    variables = _bounded(page=BIG)
    budget = variables.budget
    assert budget is not None
    variables.resolve(LIST, {"pages": ["<<var:page>>"] * 8})
    spent = STEP_BUDGET - budget.left
    assert spent >= 8 * len(BIG) // 8 // SCANS_PER_UNIT  # every repeat is written into the request
    variables.resolve({}, {"t": "<<var:page>>!"})  # text is copied, too
    assert STEP_BUDGET - budget.left >= spent + len(BIG) // CHARS_PER_UNIT
    # Calls that each pass alone fail the step together once its budget is spent, and charge nothing then.
    left = budget.left
    with pytest.raises(ReferencesTooLarge) as raised:
        for _ in range(10):
            left = budget.left
            variables.resolve(LIST, {"pages": ["<<var:page>>"] * 8})
    assert budget.left == left
    assert f"of its {STEP_BUDGET} left; split the work across steps" in str(raised.value)


def test_a_run_from_before_the_bound_fills_references_in_as_it_did():
    variables = Variables(threshold=100, values={"page": BIG}, budget=Budget(), bounded=False)
    resolved = variables.resolve(LIST, {"pages": ["<<var:page>>"] * 20})
    assert resolved == {"pages": [BIG] * 20} and variables.budget is not None
    assert variables.budget.left == STEP_BUDGET


TAKES_PAGES = {"type": "object", "properties": {"pages": {"type": "array"}}, "required": ["pages"]}
PAGES_TOOLS = {
    "api_call": {
        "name": "post",
        "type": "api_call",
        "api_call": {
            "method": "POST",
            "url": "https://site.example/post",
            "json": {"pages": "{{ arguments.pages }}"},
            "params_schema": TAKES_PAGES,
        },
    },
    "function": {"name": "post", "type": "function", "function": {"parameters": TAKES_PAGES}},
}
PASS_PAGES = {
    "prompt": "post the pages",
    "tools": "all",
    "auto_run_tools": True,
    "settings": {"pass_by_reference": True},
}


def _post_pages(count: int) -> Any:
    def model(request: dict[str, Any]) -> dict[str, Any]:
        if any(m["role"] == "tool" for m in request["messages"]):
            return completion("posted")
        return completion(tool_calls=[("post", {"pages": ["<<var:page>>"] * count})])

    return model


@pytest.mark.parametrize("kind", ["api_call", "function"])
@pytest.mark.parametrize(
    "step, at",
    [
        (PASS_PAGES, "main[1]"),
        ({"foreach": {"in": "$ [1]", "do": PASS_PAGES}}, "main[1].foreach[0]"),
        ({"over": "$ [1, 2]", "map": PASS_PAGES}, "main[1].map[0]"),
    ],
    ids=["step", "foreach", "map"],
)
async def test_a_prompt_step_that_fills_in_too_many_references_fails_and_calls_nothing(mint, kind, step, at):
    mint.fakes.model = _post_pages(200)  # 200 x 50 KB: a 10 MB request, were it built
    page = {"set": {"page": "$ 'x' * 50000"}}
    done = await mint.fail(task(page, step, tools=[PAGES_TOOLS[kind]]))
    assert mint.fakes.requests(CALL_API) == [] and done.of_type("wait") == []  # the tool never ran
    assert done.error.startswith(f"LimitExceeded: {at}: tool 'post': argument 'pages': "), done.error
    assert f"over {MAX_ELEMENTS} elements" in done.error


async def test_a_prompt_step_fills_in_references_within_the_limit(mint):
    mint.fakes.model = _post_pages(3)
    done = await mint.succeed(
        task({"set": {"page": "$ 'x' * 50000"}}, PASS_PAGES, tools=[PAGES_TOOLS["api_call"]])
    )
    (posted,) = mint.fakes.requests(CALL_API)
    assert posted["json"] == {"pages": ["x" * 50000] * 3}
    assert done.output["choices"][0]["message"]["content"] == "posted"
