"""What creating a task refuses (workflows/validate.py): every problem at once, each with the path where it is;
and what it accepts with a warning. The API answers 422 with exactly these problems (api/routes/tasks.py)."""

from __future__ import annotations

import pytest

from workflows import language as lang
from workflows.problems import MAX_SUGGESTIONS, Suggestions
from workflows.validate import TaskInvalid, TaskLimits, validate_task


def problems(document: dict, agent_tools: frozenset[str] = frozenset(), **limits) -> list[tuple[str, str]]:
    with pytest.raises(TaskInvalid) as refused:
        validate_task(document, agent_tools, TaskLimits(**limits))
    return [(p.path, p.message) for p in refused.value.problems]


def main(*steps: dict, **extra) -> dict:
    return {"name": "t", "main": list(steps), **extra}


OK = {"evaluate": {"x": "$ 1"}}


def test_a_task_needs_main():
    assert problems({"name": "t"}) == [("main", "a task needs a `main` workflow (a list of steps)")]


def test_a_task_must_be_a_mapping():
    assert problems(["main"]) == [("", "a task must be a mapping with at least `name` and `main`")]  # type: ignore[arg-type]


def test_a_mapping_that_is_no_step_kind_is_refused_listing_the_kinds():
    ((path, message),) = problems(main({"nope": 1}))
    assert path == "main[0]" and message.startswith(
        "not a step: a step is a mapping with one of the keys evaluate"
    )


def test_an_expression_that_does_not_parse_is_refused_at_its_path():
    assert problems(main({"evaluate": {"x": "$ _.a +"}})) == [
        ("main[0].evaluate.x", "syntax error in expression '_.a +': invalid syntax")
    ]


def test_an_unknown_name_in_a_nested_step_is_refused_at_its_nested_path():
    spec = main({"if": "$ True", "then": {"evaluate": {"x": "$ nope(1)"}}})
    assert problems(spec) == [("main[0].then[0].evaluate.x", "unknown name 'nope'")]


def test_an_unknown_name_in_a_reduce_is_refused_but_results_is_known():
    spec = main({"over": "$ _", "map": OK, "reduce": "$ results + bogus"})
    assert problems(spec) == [("main[0].reduce", "unknown name 'bogus'")]


def test_every_problem_is_listed_at_once():
    spec = main({"tool": "ghost"}, {"workflow": "elsewhere"}, {"evaluate": {"x": "$ ("}})
    assert [path for path, _ in problems(spec)] == ["main[0].tool", "main[1].workflow", "main[2].evaluate.x"]


def test_an_unknown_tool_is_refused_naming_the_known_ones():
    assert problems(main({"tool": "ghost"}), frozenset({"lookup"})) == [
        ("main[0].tool", "unknown tool 'ghost' (tools: lookup)")
    ]


def test_an_agents_tool_may_be_called_unless_the_task_does_not_inherit_tools():
    validate_task(main({"tool": "lookup"}), frozenset({"lookup"}))
    assert problems(main({"tool": "lookup"}, inherit_tools=False), frozenset({"lookup"})) == [
        ("main[0].tool", "unknown tool 'lookup' (tools: none)")
    ]


def test_a_prompt_offering_an_unknown_tool_is_refused():
    assert problems(main({"prompt": "hi", "tools": ["ghost"]})) == [
        ("main[0].tools[0]", "unknown tool 'ghost' (tools: none)")
    ]


def test_a_yield_to_an_unknown_workflow_is_refused():
    assert problems(main({"workflow": "ghost"})) == [
        ("main[0].workflow", "unknown workflow 'ghost' (workflows: main)")
    ]


def test_a_label_used_twice_is_refused():
    spec = main({**OK, "label": "a"}, {**OK, "label": "a"})
    assert problems(spec) == [("main[1].label", "label 'a' is already used at main[0]")]


def test_a_tool_defined_twice_is_refused():
    tools = [{"name": "a", "type": "function"}, {"name": "a", "type": "function"}]
    assert problems(main(OK, tools=tools)) == [("tools[1].name", "tool 'a' is already defined at tools[0]")]


def test_a_second_step_kind_in_one_step_is_refused_as_a_missing_dash():
    ((path, message),) = problems(main({**OK, "log": "x"}))
    assert path == "main[0].log" and "is a `-` missing before it" in message


def test_then_beside_a_step_that_has_no_then_is_refused():
    ((path, _),) = problems(main({**OK, "then": OK}))
    assert path == "main[0].then"


def test_a_step_field_of_the_wrong_shape_is_refused_at_the_field():
    assert problems(main({"wait_for_input": {"info": "x", "on_timeout": "later"}})) == [
        ("main[0].wait_for_input.on_timeout", "must be 'fail' or 'continue'")
    ]
    ((path, _),) = problems(main({"sleep": True}))
    assert path == "main[0].sleep"


def test_an_api_call_timeout_over_the_limit_is_refused():
    tools = [{"name": "f", "type": "api_call", "api_call": {"url": "https://x.example", "timeout": 1000}}]
    ((path, message),) = problems(main(OK, tools=tools))
    assert path == "tools[0].api_call.timeout" and "at most 300 seconds" in message


def test_a_literal_argument_timeout_over_the_limit_is_refused_at_creation():
    tools = [{"name": "f", "type": "api_call", "api_call": {"url": "https://x.example"}}]
    ((path, _),) = problems(main({"tool": "f", "arguments": {"timeout": 1000}}, tools=tools))
    assert path == "main[0].arguments.timeout"


def test_a_bad_input_schema_is_refused_at_its_path():
    assert problems(main(OK, input_schema={"type": "nonsense"})) == [
        ("input_schema.type", "'nonsense' is not valid under any of the given schemas")
    ]


def test_a_julep_function_mint_does_not_have_is_refused_by_name_with_the_reason():
    ((path, message),) = problems(main({"evaluate": {"x": "$ nlp.x"}}))
    assert path == "main[0].evaluate.x" and message.startswith("nlp (from Julep v1) is not available in Mint")


def test_more_steps_than_the_limit_are_refused_naming_the_first_past_it():
    assert problems(main(OK, OK, OK), max_steps=2) == [
        ("main[2]", "the task has 3 steps (nested ones included); the step limit is 2 (MINT_MAX_STEPS)")
    ]


def test_an_expression_longer_than_the_limit_is_refused():
    ((path, message),) = problems(main({"evaluate": {"x": "$ " + "1+" * 30 + "1"}}), max_expression_length=20)
    assert path == "main[0].evaluate.x" and "20" in message


def test_a_task_with_no_dollar_string_is_in_the_seed_dialect_and_warns_how_it_read_a_word():
    valid = validate_task(main({"evaluate": {"x": "hello"}}))
    assert valid.dialect == "seed"
    assert [(w.path, w.message) for w in valid.warnings] == [
        ("main[0].evaluate.x", "read as text, not Python (unknown name 'hello')")
    ]


def test_one_dollar_string_anywhere_puts_the_task_in_the_dollar_dialect():
    spec = main(
        {"if": "True", "then": {"evaluate": {"size": "big"}}, "else": {"evaluate": {"n": "$ str(_.n)"}}}
    )
    assert validate_task(spec).dialect == "dollar"


def test_an_unknown_key_julep_ignored_is_accepted_with_a_warning():
    valid = validate_task(main({"evaluate": {"x": "$ 1"}, "response_format": {"type": "json"}}))
    assert [(w.path, w.message) for w in valid.warnings] == [
        (
            "main[0].response_format",
            "ignored, as Julep v1 ignored it: `evaluate` steps have no `response_format`",
        )
    ]
    assert "response_format" not in valid.document["main"][0]


def test_the_stored_document_has_then_else_and_do_as_lists():
    valid = validate_task(main({"if": "$ True", "then": OK}))
    assert valid.document["main"] == [{"if": "$ True", "then": [{"evaluate": {"x": "$ 1"}}]}]


def test_a_tool_or_kind_named_by_something_not_text_is_refused_not_crashed_on():
    assert problems(main({"prompt": "hi", "tools": [{"name": ["x"]}]})) == [
        ("main[0].tools[0]", "unknown tool ['x'] (tools: none)")
    ]
    ((path, message),) = problems(main({"kind_": ["x"], "evaluate": {"a": "1"}}))
    assert path == "main[0].kind_"


# One answer: structural and semantic problems together, in path order, with the closest valid key or name.

PYDANTIC_WORDS = ("Value error", "Input should", "Field required", "Extra inputs", "valid dictionary", "[")


def test_structural_and_semantic_problems_come_in_one_answer_in_path_order():
    spec = main(
        {"evalute": {"x": "$ 1"}},
        {"tool": "lookup", "argumets": {"q": "$ 1"}},
        {"evaluate": {"x": "$ inptus[0]"}},
        {"workflow": "ghost"},
        {"sleep": {"seconds": 1, "sconds": 2}},
        tools=[{"name": "lookup", "type": "function"}],
        inherit_tools="maybe",
    )
    assert problems(spec) == [
        ("inherit_tools", "must be true or false"),
        ("main[0]", "unknown step key `evalute`: did you mean `evaluate`?"),
        ("main[1].argumets", "unknown key `argumets` in a `tool` step: did you mean `arguments`?"),
        ("main[2].evaluate.x", "unknown name 'inptus': did you mean `inputs`?"),
        ("main[3].workflow", "unknown workflow 'ghost' (workflows: main)"),
        ("main[4].sleep.sconds", "unknown key `sconds`: did you mean `seconds`?"),
    ]


def test_indexes_in_paths_sort_as_numbers():
    spec = main(*[OK] * 10, {"evaluate": {"x": "$ nope"}}, {"evaluate": {"x": "$ ("}}, {"log": 1})
    assert [path for path, _ in problems(spec)] == [
        "main[10].evaluate.x",
        "main[11].evaluate.x",
        "main[12].log",
    ]


def test_steps_nested_in_a_step_that_does_not_parse_are_still_checked():
    spec = main({"if": "$ (", "then": [{"evalute": {}}, {"evaluate": {"x": "$ nope"}}], "else": "text"})
    assert problems(spec) == [
        ("main[0].else[0]", lang.NOT_A_STEP),
        ("main[0].if", "syntax error in expression '(': '(' was never closed"),
        ("main[0].then[0]", "unknown step key `evalute`: did you mean `evaluate`?"),
        ("main[0].then[1].evaluate.x", "unknown name 'nope'"),
    ]


def test_every_kind_of_nesting_is_checked_below_a_step_that_does_not_parse():
    bad = {"evaluate": {"x": "$ nope"}}
    spec = main(
        {"switch": [{"case": "$ True", "then": bad}, {"case": "_", "then": [], "thne": 1}]},
        {"foreach": {"in": "$ [1]", "do": bad, "dO": 1}},
        {"over": "$ [1]", "map": bad, "parallelism": 0},
        {"parallel": [[bad], {"evalute": {}}]},
    )
    assert problems(spec) == [
        ("main[0].switch[0].then[0].evaluate.x", "unknown name 'nope'"),
        ("main[0].switch[1].then", "must not be empty"),
        ("main[0].switch[1].thne", "unknown key `thne`: did you mean `then`?"),
        ("main[1].foreach.dO", "unknown key `dO`: did you mean `do`?"),
        ("main[1].foreach.do[0].evaluate.x", "unknown name 'nope'"),
        ("main[2].map[0].evaluate.x", "unknown name 'nope'"),
        ("main[2].parallelism", "must be at least 1"),
        ("main[3].parallel[0][0].evaluate.x", "unknown name 'nope'"),
        ("main[3].parallel[1][0]", "unknown step key `evalute`: did you mean `evaluate`?"),
    ]


def test_a_label_is_checked_in_step_order_below_a_step_that_does_not_parse():
    spec = main({**OK, "label": "a"}, {"if": "$ True", "then": [{"log": "x", "label": "a"}, {"evalute": {}}]})
    assert ("main[1].then[0].label", "label 'a' is already used at main[0]") in problems(spec)


def test_steps_are_checked_beside_a_tool_and_task_fields_that_do_not_parse():
    spec = {
        "name": "",
        "tools": [
            {"name": "fetch", "type": "api_call"},
            {"name": "echo", "type": "function", "descrption": ""},
        ],
        "main": [{"tool": "fetch"}, {"tool": "ech"}, {"evaluate": {"x": "$ nope"}}],
    }
    assert problems(spec) == [
        ("main[1].tool", "unknown tool 'ech': did you mean `echo`? (tools: echo, fetch)"),
        ("main[2].evaluate.x", "unknown name 'nope'"),
        ("name", "must not be empty"),
        ("tools[0].api_call", "an api_call tool needs an `api_call` spec with at least `url`"),
        ("tools[1].descrption", "unknown key `descrption`: did you mean `description`?"),
    ]


def test_a_step_of_no_kind_names_the_closest_kind_or_the_kind_its_keys_belong_to():
    assert problems(main({"evalute": {"x": "$ 1"}, "label": "a"})) == [
        ("main[0]", "unknown step key `evalute`: did you mean `evaluate`?")
    ]
    assert problems(main({"map": OK})) == [
        ("main[0]", "not a step: `map` belongs in a `map_reduce` step, which needs `over`")
    ]
    assert problems(main({"then": OK})) == [
        ("main[0]", "not a step: `then` belongs in an `if_else` step, which needs `if`")
    ]


def test_a_typo_of_a_key_the_step_has_is_refused_and_other_unknown_keys_are_ignored():
    assert problems(main({"prompt": "hi", "setings": {}})) == [
        ("main[0].setings", "unknown key `setings` in a `prompt` step: did you mean `settings`?")
    ]
    valid = validate_task(main({"prompt": "hi", "response_format": {}}))
    assert [w.path for w in valid.warnings] == ["main[0].response_format"]


def test_a_typo_of_an_api_call_field_is_refused_and_header_like_keys_are_ignored():
    api_call = {"url": "https://x.example", "header": {"a": "b"}, "x-no-cache": "true"}
    tools = [{"name": "f", "type": "api_call", "api_call": api_call}]
    assert problems(main(OK, tools=tools)) == [
        ("tools[0].api_call.header", "unknown api_call key `header`: did you mean `headers`?")
    ]


def test_an_unknown_key_in_a_part_of_a_step_names_the_closest_key_of_that_part():
    spec = main(
        {"prompt": [{"role": "user", "contnet": "hi"}]},
        {"tool": {"name": "f", "argumets": {}}},
        {"wait_for_input": {"info": "x", "timout": 3}},
        {"tool": "f", "retry": {"max_atempts": 3}},
        {"switch": [{"case": "_", "then": OK, "zzz": 1}]},
        tools=[{"name": "f", "type": "function"}],
        defaults={"timout": 1},
    )
    assert problems(spec) == [
        ("defaults.timout", "unknown key `timout`: did you mean `timeout`?"),
        ("main[0].prompt[0].content", "missing"),
        ("main[0].prompt[0].contnet", "unknown key `contnet`: did you mean `content`?"),
        ("main[1].tool.argumets", "unknown key `argumets`: did you mean `arguments`?"),
        ("main[2].wait_for_input.timout", "unknown key `timout`: did you mean `timeout`?"),
        ("main[3].retry.max_atempts", "unknown key `max_atempts`: did you mean `max_attempts`?"),
        ("main[4].switch[0].zzz", "unknown key `zzz`: not allowed here (keys: case, then)"),
    ]


def test_a_misspelled_task_field_is_named_not_taken_for_a_workflow():
    spec = main(OK, descripton="typo", tool=[{"name": "f", "type": "function"}])
    rule = "(other top-level keys name workflows, which are lists of steps)"
    assert problems(spec) == [
        ("descripton", f"unknown task key `descripton`: did you mean `description`? {rule}"),
        ("tool", f"unknown task key `tool`: did you mean `tools`? {rule}"),
    ]
    assert problems({"name": "t", "mian": [OK]}) == [
        ("main", "a task needs a `main` workflow (a list of steps) (is `mian` meant to be `main`?)")
    ]


def test_unknown_workflow_tool_and_template_names_name_the_closest():
    spec = main(
        {"workflow": "helpr"},
        {"prompt": "hi", "tools": ["lookpu"]},
        {"log": "{{ outptus }}"},
        {"over": "$ [1]", "map": OK, "reduce": "$ result"},
        helper=[OK],
    )
    assert problems(spec, frozenset({"lookup"})) == [
        ("main[0].workflow", "unknown workflow 'helpr': did you mean `helper`? (workflows: helper, main)"),
        ("main[1].tools[0]", "unknown tool 'lookpu': did you mean `lookup`? (tools: lookup)"),
        ("main[2].log", "unknown name 'outptus' in template: did you mean `outputs`?"),
        ("main[3].reduce", "unknown name 'result': did you mean `results`?"),
    ]


def test_a_value_that_fits_no_shape_a_field_takes_says_which_it_may_be():
    spec = main({"tool": ["f"]}, {"prompt": 3}, {"prompt": "hi", "tools": "some"})
    assert problems(spec) == [
        ("main[0].tool", "must be text or a mapping"),
        ("main[1].prompt", "must be text or a list"),
        ("main[2].tools", "must be 'all' or a list"),
    ]


@pytest.mark.parametrize(
    "document",
    [
        {"main": [OK]},
        {"name": 5, "main": {"evaluate": {}}, "helper": []},
        main({"wait_for_input": {"info": "x", "on_timeout": "later", "timeout": -1}}),
        main({"prompt": [{"role": "robot"}], "max_turns": "many"}),
        main({"sleep": True}, {"workflow": "bad name!"}, {"evaluate": "x"}, {"switch": []}),
        main(OK, tools=[{"name": "a b", "type": "nope", "extra": 1}], defaults={"retry": {"backoff": 99}}),
        main(OK, inherit_tools="maybe", metadata=[1], input_schema="x"),
    ],
)
def test_no_message_is_in_pydantics_words(document):
    found = problems(document)
    assert found and not [m for _, m in found if any(w in m for w in PYDANTIC_WORDS)], found


def test_the_raw_places_of_nested_steps_match_the_parsed_ones():
    """StepModel.NESTED (where the parse by parts finds nested steps) says what nested_steps says."""
    raw_steps = [
        {"if": "$ True", "then": OK, "else": [OK, OK]},
        {"switch": [{"case": "$ True", "then": OK}, {"case": "_", "then": [OK]}]},
        {"foreach": {"in": "$ [1]", "do": OK}},
        {"over": "$ [1]", "map": OK},
        {"parallel": [[OK], OK]},
    ]
    for raw in raw_steps:
        found: list[str] = []

        def note(path: str, value: object, found: list[str] = found) -> object:
            found.append(path)
            return value

        lang.replace_nested(raw, "s", note)
        assert found == [
            nested.path for nested in lang.nested_steps(lang.STEP.validate_python(raw), "s", "s")
        ], raw


def test_a_document_looks_up_a_bounded_number_of_unknown_keys_and_names():
    """Each look-up compares with every candidate: a document of thousands of unknown keys costs no more than
    MAX_SUGGESTIONS of them; past that, unknown names get no suggestion and unknown step keys are ignored."""
    suggest = Suggestions(limit=1)
    assert suggest("evalute", lang.STEP_KEYS) == ": did you mean `evaluate`?"
    assert suggest("evalute", lang.STEP_KEYS) == ""
    steps = [{"evaluate": {"x": "$ inptus"}}] * (MAX_SUGGESTIONS + 1)
    found = problems(main(*steps, {"log": "x", "lable": "a"}))
    assert found[MAX_SUGGESTIONS - 1][1] == "unknown name 'inptus': did you mean `inputs`?"
    assert found[MAX_SUGGESTIONS][1] == "unknown name 'inptus'"
    assert len(found) == MAX_SUGGESTIONS + 1  # the typo'd `lable` is past the budget: ignored with a warning
