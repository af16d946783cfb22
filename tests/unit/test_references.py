"""Pass by reference (workflows/references.py): which variables fit which parameters, what the model is
offered and reads, and what a tool receives. Pure functions; the HTTP-level tests are tests/test_references.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from contracts.temporal import CALL_API, CALL_MODEL
from tests.unit.fakes import completion, http_response
from tests.unit.harness import task
from workflows.references import (
    DEFAULT_THRESHOLD,
    BadReference,
    ReferenceSettings,
    Variables,
    fits,
    setting_problems,
    split_settings,
)

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
