"""Each string read as Julep v1 reads it, and lenient where Julep was lenient.

Reading: a string is Python, a template or text on its own (`workflows/dialect.py`); a Julep task with no `$ `
keeps its literals, a `$` task reads `_[0]` as Python, the seed's Daily Motivation still runs as written, and
the creation answer says, with the path, how each string that could be read either way was read. Leniency:
keys Julep ignored are accepted and listed as warnings; list `limit`s Julep took work.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers import create_agent, run_task, start, wait_for_status
from tests.helpers import create_task as create_task_quietly
from workflows.dialect import read_template, read_value

EXAMPLES = Path(__file__).parent.parent / "examples"


async def create_task(api: Any, agent_id: str, task: dict[str, Any] | str) -> dict[str, Any]:
    """This file reads each task's warnings: asked for in the answer (`?warnings=true`)."""
    return await create_task_quietly(api, agent_id, task, warnings=True)


JOINED = "'\n'.join(_)"  # Julep's sample task: a real newline inside the quotes, so not Python

# The per-string rule -------------------------------------------------------------------------------------------

READINGS = [
    # (string, dialect, how it is read)
    ("$ _.x + 1", "dollar", "python"),
    ("  $ _.x", "seed", "python"),  # Julep strips the string first
    ("hi {{ _.x }}", "dollar", "template"),
    ("hi {{ _.x }}", "seed", "template"),
    ("_", "dollar", "python"),
    ("_.name", "dollar", "python"),
    ("_[0]", "dollar", "python"),
    ("[1, 2]", "dollar", "python"),
    ("inputs[0]", "dollar", "python"),
    ("len(outputs[0])", "dollar", "python"),
    ("_[0].name", "dollar", "text"),  # `_[` without the closing `]` last: Julep's text
    ("New York", "dollar", "text"),
    ("1 + 1", "dollar", "text"),
    ("New York", "seed", "text"),
    ("Please approve", "seed", "text"),
    ("number", "seed", "text"),
    ("hi", "seed", "text"),
    ("Julep", "seed", "text"),
    (JOINED, "seed", "text"),
    ("string", "seed", "text"),  # a module: never a value
    ("follow-up", "seed", "text"),  # parses, but names unknown names
    ("24*3600", "seed", "python"),
    ('"Daily Motivation"', "seed", "python"),
    ('_["choices"][0].content', "seed", "python"),
    ('randint(len(_["topics"]))', "seed", "python"),
    ("10", "seed", "python"),
    ("$_ [{'role': 'user', 'content': _.test}]", "dollar", "text"),  # `$` needs a space after it
    ("$_.x", "seed", "text"),
    ("$5", "dollar", "text"),
]


@pytest.mark.parametrize(("raw", "dialect", "how"), READINGS)
def test_each_string_is_read_on_its_own(raw, dialect, how):
    assert read_value(raw, dialect).how == how


@pytest.mark.parametrize(
    ("raw", "dialect", "noted"),
    [
        ("New York", "seed", True),  # a seed reader would have tried Python
        ("24*3600", "seed", True),  # Julep would read it as text
        ("_[0]", "seed", False),  # Python by both readings
        ("_[0]", "dollar", True),  # Python by Julep's shape, not by a `$ `
        ("New York", "dollar", False),  # text by both readings
        ("1", "dollar", True),  # text here, a number in a task with no `$ `
        ("$ _.x", "dollar", False),
        ("$_.x", "dollar", True),
        ("$USD", "dollar", False),  # plainly text
    ],
)
def test_a_string_that_could_be_read_either_way_is_noted(raw, dialect, noted):
    assert bool(read_value(raw, dialect).note) == noted


def test_a_prompt_is_a_template_unless_it_starts_with_dollar_space():
    assert read_template("$ _.text").how == "python"
    assert read_template("Summarize {{ _.text }}").how == "template"
    no_space = read_template("$_ [{'role': 'user', 'content': _.test}]")
    assert no_space.how == "template" and "space" in no_space.note


# Rule 1 on the real stack -------------------------------------------------------------------------------------


def warned(task: dict[str, Any]) -> dict[str, str]:
    return {w["path"]: w["message"] for w in task["warnings"]}


async def test_a_julep_task_without_dollar_keeps_its_literals_and_says_so(api):
    spec = {
        "name": "literals",
        "main": [
            {
                "evaluate": {
                    "location": "New York",
                    "message": "Please approve",
                    "kind": "number",
                    "query": "Julep",
                    "joined": JOINED,
                    "count": "len(_['xs'])",
                    "first": "_['xs'][0]",
                }
            },
            {"wait_for_input": {"info": {"message": "Please provide your name", "type": "number"}}},
        ],
    }
    agent = await create_agent(api)
    task = await create_task(api, agent["id"], spec)
    warnings = warned(task)
    text = {
        "main[0].evaluate.location",
        "main[0].evaluate.message",
        "main[0].evaluate.kind",
        "main[0].evaluate.query",
        "main[0].evaluate.joined",
        "main[1].wait_for_input.info.message",
        "main[1].wait_for_input.info.type",
    }
    assert set(warnings) == text | {"main[0].evaluate.count"}, warnings
    assert all(warnings[p].startswith("read as text") for p in text)
    assert warnings["main[0].evaluate.count"].startswith("read as Python")
    execution = await start(api, task["id"], {"xs": [3, 4]})
    waiting = await wait_for_status(api, execution["id"], {"awaiting_input"})
    assert waiting["status"] == "awaiting_input", waiting
    resumed = await api.put(f"/executions/{execution['id']}", json={"status": "running", "input": {"n": 1}})
    assert resumed.status_code == 200, resumed.text
    done = await wait_for_status(api, execution["id"])
    assert done["status"] == "succeeded", done
    rows = (await api.get(f"/executions/{execution['id']}/transitions", params={"direction": "asc"})).json()
    evaluated = rows["items"][1]["output"]
    assert evaluated == {
        "location": "New York",
        "message": "Please approve",
        "kind": "number",
        "query": "Julep",
        "joined": JOINED,
        "count": 2,
        "first": 3,
    }
    wait = next(r for r in rows["items"] if r["type"] == "wait")
    assert wait["output"]["info"] == {"message": "Please provide your name", "type": "number"}


async def test_a_dollar_task_reads_julep_shapes_as_python(api):
    spec = {
        "name": "shapes",
        "main": [
            {
                "evaluate": {
                    "user": "_[0]",
                    "names": "[u['name'] for u in _]",
                    "input": "inputs[0][1]",
                    "whole": "_",
                    "count": "$ len(_)",
                    "literal": "New York",
                    "not_python": "_[0].name",
                    "one": "1",
                }
            },
            {"evaluate": {"id": "_.user.id", "greeting": "hi {{ _.user.name }}"}},
        ],
    }
    users = [{"id": "u-1", "name": "Ada"}, {"id": "u-2", "name": "Bo"}]
    agent = await create_agent(api)
    task = await create_task(api, agent["id"], spec)
    warnings = warned(task)
    python = {
        "main[0].evaluate.user",
        "main[0].evaluate.names",
        "main[0].evaluate.input",
        "main[1].evaluate.id",
    }
    python |= {"main[0].evaluate.whole"}
    assert set(warnings) == python | {"main[0].evaluate.not_python", "main[0].evaluate.one"}, warnings
    assert all(warnings[p].startswith("read as Python") for p in python)
    assert warnings["main[0].evaluate.one"].startswith("read as text")
    execution = await start(api, task["id"], users)
    done = await wait_for_status(api, execution["id"])
    assert done["status"] == "succeeded", done
    assert done["output"] == {"id": "u-1", "greeting": "hi Ada"}
    rows = (await api.get(f"/executions/{execution['id']}/transitions", params={"direction": "asc"})).json()
    assert rows["items"][1]["output"] == {
        "user": users[0],
        "names": ["Ada", "Bo"],
        "input": users[1],
        "whole": users,
        "count": 2,
        "literal": "New York",
        "not_python": "_[0].name",
        "one": "1",
    }


async def test_dollar_without_a_space_is_text_and_said_so(api):
    spec = {"name": "no space", "main": [{"evaluate": {"x": "$ _.n", "y": "$_.n", "price": "$USD 5"}}]}
    agent = await create_agent(api)
    task = await create_task(api, agent["id"], spec)
    assert list(warned(task)) == ["main[0].evaluate.y"]
    done, _ = await run_task(api, spec, {"n": 7}, agent_id=agent["id"])
    assert done["output"] == {"x": 7, "y": "$_.n", "price": "$USD 5"}


async def test_the_seeds_daily_motivation_is_read_as_written_and_says_where_julep_differs(api):
    """Every expression of the seed stays Python (tests/test_prompts.py runs it end to end); the three Julep v1
    would have read as text are named, and nothing else is."""
    agent = await create_agent(api)
    task = await create_task(api, agent["id"], (EXAMPLES / "daily_motivation.yaml").read_text())
    warnings = warned(task)
    assert set(warnings) == {
        "main[3].tool.arguments.subject",  # '"Daily Motivation"'
        "main[3].tool.arguments.content",  # _["choices"][0].content
        "main[4].sleep",  # 24*3600
    }, warnings
    assert all(m.startswith("read as Python") for m in warnings.values())


async def test_a_task_with_nothing_ambiguous_has_no_warnings(api):
    agent = await create_agent(api)
    task = await create_task(
        api, agent["id"], {"name": "plain", "main": [{"evaluate": {"x": "$ 1", "y": "y"}}]}
    )
    assert task["warnings"] == []
    fetched = (await api.get(f"/tasks/{task['id']}")).json()
    assert fetched["main"] == task["main"]


# Rule 6: lenient where Julep was lenient ---------------------------------------------------------------------

LENIENT_TASK = {
    "name": "lenient",
    "tools": [
        {
            "name": "reader",
            "type": "api_call",
            "api_call": {
                "method": "GET",
                "url": "https://r.jina.ai/https://example.com",
                "x-return-format": "markdown",  # Julep's cookbook: header-like keys beside the fields
                "Authorization": "Bearer not-sent",
            },
        }
    ],
    "main": [
        {"evaluate": {"n": "$ 1"}, "unwrap": True, "note": "free text"},
        {"log": "n is {{ _.n }}", "response_format": {"type": "json_object"}},
        {"if": "$ _.n == 1", "then": {"return": {"ok": "$ _.n"}, "comment": "x"}},
    ],
}


async def test_keys_julep_ignored_are_ignored_and_listed_with_their_paths(api):
    agent = await create_agent(api)
    task = await create_task(api, agent["id"], LENIENT_TASK)
    warnings = warned(task)
    assert set(warnings) == {
        "tools[0].api_call.x-return-format",
        "tools[0].api_call.Authorization",
        "main[0].unwrap",
        "main[0].note",
        "main[1].response_format",
        "main[2].then[0].comment",
    }, warnings
    assert all(m.startswith("ignored, as Julep v1 ignored it") for m in warnings.values())
    assert "headers" in warnings["tools[0].api_call.Authorization"]
    # Ignored means gone: not stored, not sent, and the task runs as if they were never written.
    fetched = (await api.get(f"/tasks/{task['id']}")).json()
    assert fetched["tools"][0]["api_call"].keys() == {"method", "url", "follow_redirects"}
    assert fetched["main"][0] == {"kind_": "evaluate", "evaluate": {"n": "$ 1"}}
    done, _ = await run_task(api, LENIENT_TASK, agent_id=agent["id"])
    assert done["status"] == "succeeded" and done["output"] == {"ok": 1}, done


async def test_a_prompts_step_level_response_format_is_ignored_with_a_pointer_to_settings(api):
    agent = await create_agent(api)
    spec = {"name": "p", "main": [{"prompt": "hi", "response_format": {"type": "json_object"}}]}
    task = await create_task(api, agent["id"], spec)
    assert "goes under `settings`" in warned(task)["main[0].response_format"]


@pytest.mark.parametrize(
    ("step", "path"),
    [
        pytest.param({"log": "a", "evaluate": {"x": "$ 1"}}, "main[0].log", id="two_kinds"),
        pytest.param({"log": "a", "then": [{"log": "b"}]}, "main[0].then", id="then_without_if"),
        pytest.param({"evaluate": {"x": "$ 1"}, "do": {"log": "b"}}, "main[0].do", id="do_without_foreach"),
    ],
)
async def test_a_key_that_starts_another_step_is_still_refused(api, step, path):
    """Two steps written as one (a missing `-`) would drop a step silently: refused, with the path."""
    agent = await create_agent(api)
    response = await api.post(f"/agents/{agent['id']}/tasks", json={"name": "t", "main": [step]})
    assert response.status_code == 422, response.text
    problems = {p["loc"]: p["msg"] for p in response.json()["error"]["details"]}
    assert "each step has one kind" in problems[path], problems


@pytest.mark.parametrize("key", ["secrets", "files", "cookies", "include_response_content"])
async def test_julep_api_call_fields_mint_does_not_implement_are_refused(api, key):
    agent = await create_agent(api)
    tool = {"name": "t", "type": "api_call", "api_call": {"url": "https://example.com", key: {"a": "b"}}}
    response = await api.post(
        f"/agents/{agent['id']}/tasks",
        json={"name": "t", "tools": [tool], "main": [{"evaluate": {"x": "$ 1"}}]},
    )
    assert response.status_code == 422, response.text
    problems = {p["loc"]: p["msg"] for p in response.json()["error"]["details"]}
    assert "is not supported" in problems[f"tools[0].api_call.{key}"], problems
    response = await api.post(f"/agents/{agent['id']}/tools", json=tool)
    assert response.status_code == 422 and f"api_call.{key}" in response.text, response.text


async def test_an_agents_api_call_tool_lists_the_keys_it_ignored(api):
    agent = await create_agent(api)
    tool = {"name": "reader", "type": "api_call", "api_call": {"url": "https://example.com", "x-with": "x"}}
    created = await api.post(f"/agents/{agent['id']}/tools", json=tool)
    assert created.status_code == 201, created.text
    assert [w["path"] for w in created.json()["warnings"]] == ["api_call.x-with"]
    assert "x-with" not in created.json()["api_call"]
    replaced = await api.put(f"/agents/{agent['id']}/tools/{created.json()['id']}", json=tool)
    assert [w["path"] for w in replaced.json()["warnings"]] == ["api_call.x-with"]
    listed = (await api.get(f"/agents/{agent['id']}/tools")).json()["items"]
    assert listed[0].get("warnings") is None and "x-with" not in listed[0]["api_call"]


async def test_an_executions_transitions_list_takes_julep_limits(api):
    """Julep's cookbooks read `transitions.list(execution_id, limit=2000)`; other lists keep 1..1000."""
    done, _ = await run_task(api, {"name": "t", "main": [{"evaluate": {"x": "$ 1"}}]})
    for limit in (2000, 10_000):
        response = await api.get(f"/executions/{done['id']}/transitions", params={"limit": limit})
        assert response.status_code == 200 and len(response.json()["items"]) == 3, response.text
    response = await api.get(f"/executions/{done['id']}/transitions", params={"limit": 10_001})
    assert response.status_code == 422 and "limit" in response.text


async def test_thousands_of_ignored_keys_get_a_short_answer(api):
    """What a crowd or an attacker sends: the answer lists the first warnings and counts the rest, and quotes
    a huge key by its start."""
    agent = await create_agent(api)
    step = {"evaluate": {"x": "$ 1"}, "y" * 100_000: 1, **{f"k{i}": i for i in range(5000)}}
    task = await create_task(api, agent["id"], {"name": "t", "main": [step]})
    assert len(task["warnings"]) == 101
    assert task["warnings"][-1]["message"] == "and 4901 more warnings like these, not listed"
    assert task["warnings"][0]["path"] == "main[0]." + "y" * 80 + "..."
    assert all(len(w["path"]) + len(w["message"]) < 500 for w in task["warnings"])
