"""The task language's models (workflows/language/): how a document parses into steps, and what it refuses."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from workflows import language as lang


def parse(document: dict) -> lang.TaskSpec:
    return lang.TaskSpec.model_validate({"name": "t", **document})


def first(step: dict) -> object:
    return parse({"main": [step]}).workflows["main"][0]


@pytest.mark.parametrize(
    ("step", "model"),
    [
        ({"evaluate": {"x": 1}}, lang.EvaluateStep),
        ({"prompt": "hi"}, lang.PromptStep),
        ({"tool": "t"}, lang.ToolCallStep),
        ({"if": "x", "then": {"get": "a"}}, lang.IfElseStep),
        ({"switch": [{"case": "_", "then": {"get": "a"}}]}, lang.SwitchStep),
        ({"foreach": {"in": "x", "do": {"get": "a"}}}, lang.ForeachStep),
        ({"over": "x", "map": {"get": "a"}}, lang.MapReduceStep),
        ({"parallel": [{"get": "a"}]}, lang.ParallelStep),
        ({"sleep": 5}, lang.SleepStep),
        ({"wait_for_input": {"info": "x"}}, lang.WaitForInputStep),
        ({"workflow": "main"}, lang.YieldStep),
        ({"return": 1}, lang.ReturnStep),
        ({"error": "x"}, lang.ErrorStep),
        ({"log": "x"}, lang.LogStep),
        ({"set": {"a": 1}}, lang.SetStep),
        ({"get": "a"}, lang.GetStep),
        ({"search": {"query": "x"}}, lang.SearchStep),
    ],
)
def test_each_step_kind_is_told_by_its_key(step, model):
    assert type(first(step)) is model


def test_kind_underscore_names_the_kind_explicitly():
    assert lang.step_kind({"kind_": "log", "log": "x"}) == "log"


def test_every_unknown_top_level_key_is_a_named_workflow_and_known_record_fields_are_ignored():
    spec = parse({"main": [{"get": "a"}], "helper": [{"get": "b"}], "id": "x", "created_at": "y"})
    assert list(spec.workflows) == ["main", "helper"]


def test_then_else_and_do_take_one_step_or_a_list():
    step = first({"if": "x", "then": {"get": "a"}, "else": [{"get": "b"}, {"get": "c"}]})
    assert [type(s) for s in step.then] == [lang.GetStep]
    assert [s.get for s in step.else_] == ["b", "c"]


def test_an_empty_branch_is_refused():
    with pytest.raises(ValidationError):
        first({"if": "x", "then": []})


def test_a_tool_step_takes_a_name_and_arguments_or_the_seeds_mapping():
    dollar = first({"tool": "fetch", "arguments": {"a": 1}})
    seed = first({"tool": {"name": "fetch", "arguments": {"a": 1}}})
    assert (
        (dollar.tool_name, dollar.tool_arguments)
        == (seed.tool_name, seed.tool_arguments)
        == ("fetch", {"a": 1})
    )


def test_sleep_takes_seconds_or_units_but_not_a_boolean():
    assert first({"sleep": {"minutes": 2}}).sleep == lang.SleepFor(minutes=2)
    assert first({"sleep": "24*3600"}).sleep == "24*3600"
    with pytest.raises(ValidationError, match="sleep takes a number of seconds"):
        first({"sleep": True})


def test_a_wait_timeout_is_bounded_to_30_days():
    with pytest.raises(ValidationError):
        first({"wait_for_input": {"info": "x", "timeout": 31 * 86400}})


def test_map_parallelism_is_between_1_and_100():
    for bad in (0, 101):
        with pytest.raises(ValidationError):
            first({"over": "x", "map": {"get": "a"}, "parallelism": bad})


def test_a_yield_names_a_workflow_by_a_plain_name():
    with pytest.raises(ValidationError):
        first({"workflow": "not a name"})


def test_the_seeds_function_tool_form_is_a_function_tool():
    assert lang.ToolDef.model_validate({"function": None, "name": "send_email"}).type == "function"


def test_an_api_call_tool_needs_its_spec_and_a_system_tool_a_known_operation():
    with pytest.raises(ValidationError, match="needs an `api_call` spec"):
        lang.ToolDef.model_validate({"name": "f", "type": "api_call"})
    with pytest.raises(ValidationError):
        lang.ToolDef.model_validate(
            {"name": "s", "type": "system", "system": {"resource": "nope", "operation": "x"}}
        )


def test_unknown_keys_on_a_step_are_set_aside_and_never_stored():
    step = first({"evaluate": {"x": 1}, "response_format": "json"})
    assert step.ignored_keys == ("response_format",)
    assert lang.dump_step(step) == {"evaluate": {"x": 1}}


def test_walk_steps_visits_nested_steps_depth_first_with_their_paths():
    spec = parse(
        {
            "main": [
                {"parallel": [{"get": "a"}, [{"get": "b"}, {"get": "c"}]]},
                {"switch": [{"case": "_", "then": {"get": "d"}}]},
                {"foreach": {"in": "x", "do": {"get": "e"}}},
            ]
        }
    )
    assert [placed.path for placed in lang.walk_steps(spec.workflows["main"], "main")] == [
        "main[0]",
        "main[0].parallel[0][0]",
        "main[0].parallel[1][0]",
        "main[0].parallel[1][1]",
        "main[1]",
        "main[1].switch[0].then[0]",
        "main[2]",
        "main[2].foreach.do[0]",
    ]


def test_walk_steps_gives_each_step_the_path_the_interpreter_runs_it_under():
    """A switch branch runs as `switch[i]` and a foreach body as `foreach` (workflows/interpreter.py,
    workflows/fan_out.py), while the task as written names `switch[i].then` and `foreach.do`."""
    spec = parse(
        {
            "main": [
                {"switch": [{"case": "_", "then": {"if": "x", "then": {"get": "a"}}}]},
                {"foreach": {"in": "x", "do": {"over": "x", "map": {"get": "b"}}}},
                {"parallel": [[{"get": "c"}]]},
            ]
        }
    )
    placed = list(lang.walk_steps(spec.workflows["main"], "main"))
    assert [(p.workflow, p.index) for p in placed] == [
        ("main", 0),
        ("main[0].switch[0]", 0),
        ("main[0].switch[0][0].then", 0),
        ("main", 1),
        ("main[1].foreach", 0),
        ("main[1].foreach[0].map", 0),
        ("main", 2),
        ("main[2].parallel[0]", 0),
    ]
    assert [p.parent.runtime if p.parent else None for p in placed] == [
        None,
        "main[0]",
        "main[0].switch[0][0]",
        None,
        "main[1]",
        "main[1].foreach[0]",
        None,
        "main[2]",
    ]


def test_a_dumped_step_parses_back_to_the_same_step():
    step = first(
        {"over": "$ _", "map": [{"sleep": {"minutes": 2}}], "reduce": "$ results + [_]", "parallelism": 3}
    )
    assert lang.parse_steps([lang.dump_step(step)]) == [step]


def test_the_document_keeps_named_workflows_at_the_top_level():
    document = parse({"main": [{"get": "a"}], "helper": [{"get": "b"}]}).to_document()
    assert document["main"] == [{"get": "a"}] and document["helper"] == [{"get": "b"}]
    assert "workflows" not in document
