"""Issue 13 rules 1 and 6: each string read as Julep v1 reads it, and lenient where Julep was lenient.

Rule 1: a string is Python, a template or text on its own (`workflows/dialect.py`); a Julep task with no `$ `
keeps its literals, a `$` task reads `_[0]` as Python, the seed's Daily Motivation still runs as written, and
the creation answer says, with the path, how each string that could be read either way was read. Rule 6: keys
Julep ignored are accepted and listed as warnings; list `limit`s Julep took work.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers import create_agent, create_task, run_task, start, wait_for_status
from workflows.dialect import read_template, read_value

EXAMPLES = Path(__file__).parent.parent / "examples"
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
