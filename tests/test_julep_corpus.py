"""Julep v1's own tasks, run the way Julep runs them, as a Julep v1 drop-in must.

Every file in `../shared/julep-tasks/` (63 tasks from Julep's cookbooks, docs, sample tasks and workflow
tests; `SOURCES.md` there says where each comes from) is one case below: the input its source implies, what
the fake model and any fake web host answer, the waits it answers as the source does, and the outcome Julep
defines. The files are read in place, never copied; the only change a test makes to one is the agent id
(`__AGENT_ID__`) and, for `api_call` tools, a public host rewritten to a local fake (this machine has no
internet), each said in the case's `why`.

Outcomes: `succeeded` (with the output Julep's docs or upstream test define), `failed` (the execution ends
with an error matching `error`), `refused` (task creation answers 4xx, as Julep's schema refuses the file) and `error` (Julep fails this task;
Mint may refuse it at creation or fail the execution, as long as the message names the cause).

Where Mint differs from Julep today the case carries `xfail`, strict, naming the issue-13 rule and the cause;
a fix turns the case green and the strict mark then fails until it is removed.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest
import yaml
from julep import APIStatusError, AsyncJulep

from tests.helpers import TERMINAL, create_agent, transitions, wait_for_status
from tests.integration_fakes import CLOUDINARY_UPLOADS
from tests.local_http import Answer, LocalServer, Request
from tests.model_server import Call, Reply

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "julep-tasks"
ANY = object()  # an output that is not checked


@dataclass
class World:
    """One case's run: the API, its agent, what setup made, and what the run produced."""

    api: httpx.AsyncClient
    agent: dict[str, Any]
    calls: list[Call]  # every model request of this test, in order
    vars: dict[str, Any] = field(default_factory=dict)
    http: list[Request] = field(default_factory=list)  # requests the fake web host received
    waits: list[Any] = field(default_factory=list)  # the output of each `wait` transition answered
    execution: dict[str, Any] = field(default_factory=dict)
    transitions: list[dict[str, Any]] = field(default_factory=list)
    mailbox: Any = None  # what the SMTP fake received (tests/integration_fakes.py)


Setup = Callable[[World], Awaitable[None]]
Check = Callable[[World], Awaitable[None]]


@dataclass(frozen=True)
class Case:
    why: str  # the input and expectation, with where they come from (SOURCES.md, Julep's docs or source)
    input: Any = field(default_factory=dict)  # or a function of the World, for ids made by `setup`
    outcome: str = "succeeded"
    output: Any = ANY  # the expected output, or a function of it that returns True when it is right
    error: str = ""  # a regex the error (execution error or refusal body) must match
    smtp_host: str = ""  # the SMTP server the file names (with `port: 587`), rewritten to the local fake
    model: Callable[[Call], Reply | str] | None = None  # the fake model; default: echo the last message
    answers: tuple[Any, ...] = ()  # resume inputs, in order, for waits and function tool calls
    web: Callable[[Request], Answer] | None = None  # the fake for the public hosts in `hosts`
    hosts: tuple[str, ...] = ()
    agent: dict[str, Any] = field(default_factory=dict)  # agent fields beyond the defaults
    setup: Setup | None = None
    check: Check | None = None  # more checks once the run is over
    xfail: str = ""  # why Mint differs from Julep today (issue-13 rule and cause)
    edits: tuple[tuple[str, str], ...] = ()  # (text, replacement) made in the file, each said in `why`


# --- fake models ------------------------------------------------------------------------------------------


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return "" if content is None else json.dumps(content)


def prompt_text(call: Call) -> str:
    return "\n".join(_text(m.get("content")) for m in call.messages)


def echo(call: Call) -> Reply:
    return Reply(content=f"echo: {_text(call.messages[-1].get('content')).strip()}")


def says(text: str) -> Callable[[Call], Reply]:
    return lambda call: Reply(content=text)


def jsonish(call: Call) -> Reply:
    """Answers JSON when the request asks for it (json_object / json_schema), else echoes."""
    kind = (call.body.get("response_format") or {}).get("type")
    if kind == "json_schema":
        return Reply(content=json.dumps({"product_name": "Widget", "features": ["small"], "price": 9.5}))
    if kind == "json_object":
        return Reply(content=json.dumps({"facts": ["dark", "cold", "big"]}))
    return echo(call)


def email_model(call: Call) -> Reply:
    if "craft an email body" in prompt_text(call):
        return Reply(content=json.dumps({"subject": "Re: agents", "body": "Create one with agents.create."}))
    return Reply(content="how to create an agent")


def video_model(call: Call) -> Reply:
    return Reply(content='```json\n[{"aspect_ratio": "1.0", "width": "250", "crop": "fill"}]\n```')


def research_model(call: Call) -> Reply:
    if "top 5 relevant research papers" in prompt_text(call):
        papers = [f"Paper {i} on LLMs,http://arxiv.org/pdf/2401.0000{i}v1" for i in range(2)]
        return Reply(content=",,".join(papers))
    return Reply(content="LLMs, agents")


def reels_model(call: Call) -> Reply:
    if "3 engaging video hooks" in prompt_text(call):
        hooks = {"caption": "c", "hooks": ["Stop scrolling!", "You won't believe", "Three tips"]}
        return Reply(content=f"```json\n{json.dumps(hooks)}\n```")
    description = {"caption": "c", "virality_score": 0.1, "engagement_score": 0.2, "description": "a reel"}
    return Reply(content=f"```json\n{json.dumps(description)}\n```")


# --- fake web hosts ---------------------------------------------------------------------------------------


def json_answer(body: Any) -> Answer:
    return 200, {"Content-Type": "application/json"}, json.dumps(body).encode()


def httpbin(request: Request) -> Answer:
    """httpbin.org/get: echoes the query string under `args`."""
    parts = urlsplit(request.path)
    return json_answer({"args": dict(parse_qsl(parts.query)), "url": request.path})


def weather(request: Request) -> Answer:
    return json_answer({"name": "London", "main": {"temp": 12.5}, "weather": [{"main": "Clouds"}]})


def jina(request: Request) -> Answer:
    content = (
        "Mint runs agent tasks durably. Every step is recorded. "
        "A crash resumes where it stopped. Tasks are written in YAML. "
        "Executions can wait for input. Tools call the web and the model."
    )
    return json_answer({"code": 200, "data": {"title": "Mint", "content": f"  {content}  "}})


REELS = [
    {
        "caption": {"text": "Tour this loft", "id": "17", "hashtags": ["realestate"]},
        "code": "abc",
        "play_count": 1000,
        "like_count": 100,
        "reshare_count": 10,
        "user": {"username": "homes", "full_name": "Homes Inc"},
    },
    {"caption": None, "code": "def", "play_count": 0},
]


def rapidapi(request: Request) -> Answer:
    return json_answer({"data": {"items": REELS}})


HN_STORIES = {
    1: {"id": 1, "title": "Durable agents", "url": "https://example.com/a", "score": 120, "kids": [11]},
    2: {"id": 2, "title": "Low score", "url": "https://example.com/b", "score": 3},
}


def hacker_news(request: Request) -> Answer:
    if request.path.startswith("/v0/topstories.json"):
        return json_answer(list(HN_STORIES))
    match = re.match(r"/v0/item/(\d+)\.json", request.path)
    if match and int(match.group(1)) in HN_STORIES:
        return json_answer(HN_STORIES[int(match.group(1))])
    if match:
        return json_answer({"id": int(match.group(1)), "text": "Great read"})
    return 404, {}, b"not found"


# --- setups and checks ------------------------------------------------------------------------------------


async def post(world: World, path: str, body: Any, status: int = 201) -> dict[str, Any]:
    response = await world.api.post(path, json=body)
    assert response.status_code == status, f"setup {path}: {response.status_code} {response.text}"
    return response.json()


async def companion_users(world: World) -> None:
    """The companion cookbook's user, found by `ppid` in its metadata, and a newer decoy, so a dropped
    metadata_filter picks the wrong one (`sort_by: created_at, direction: desc, limit: 1`)."""
    user = await post(
        world, "/users", {"name": "Hamada", "about": "Lives in New York", "metadata": {"ppid": "p-1"}}
    )
    await post(world, "/users", {"name": "Decoy", "about": "Not the one", "metadata": {"ppid": "p-2"}})
    world.vars["user"] = user


async def companion_session(world: World) -> None:
    """The companion cookbook's session with two chat turns of history."""
    await companion_users(world)
    body = {
        "agent": world.agent["id"],
        "user": world.vars["user"]["id"],
        "situation": "You are Rosa, a companion.",
        "metadata": {"kept": "yes"},
    }
    session = await post(world, "/sessions", body)
    for text in ("Hey Rosa, how are you?", "I moved to San Francisco."):
        chat = {"messages": [{"role": "user", "content": text}], "recall": False}
        await post(world, f"/sessions/{session['id']}/chat", chat, status=201)
    world.vars["session"] = session
    world.calls.clear()  # the chats' model calls are setup, not the task's


async def video_transformed(world: World) -> None:
    assert CLOUDINARY_UPLOADS["v1"]["transformation"] == "ar_1.0,c_fill,w_250", CLOUDINARY_UPLOADS["v1"]


async def research_user(world: World) -> None:
    """The research cookbook's user: its `ppid` is its own id, and it has a persona doc."""
    user = await post(world, "/users", {"name": "Ada", "about": "Reads about LLMs"})
    patched = await world.api.patch(f"/users/{user['id']}", json={"metadata": {"ppid": user["id"]}})
    assert patched.status_code == 200, patched.text
    await post(world, f"/users/{user['id']}/docs", {"title": "Persona", "content": "Researches LLM agents."})
    world.vars["user"] = user


async def research_papers_saved(world: World) -> None:
    docs = {d["title"]: d for d in await docs_of(world, f"/users/{world.vars['user']['id']}")}
    text = json.dumps(docs["Research Papers"]["content"])
    assert "Page 1 of https://arxiv.org/pdf/2401.00000v1" in text, text[:500]
    assert "Page 2 of https://arxiv.org/pdf/2401.00001v1" in text, text[:500]


async def hooks_doc(world: World) -> None:
    await post(
        world, f"/agents/{world.agent['id']}/docs", {"title": "Hooks", "content": "Hook: ask a question."}
    )


async def sub_task(world: World) -> None:
    task = {"name": "child", "main": [{"evaluate": {"ran": "$ True"}}]}
    world.vars["sub_task"] = await post(world, f"/agents/{world.agent['id']}/tasks", task)


async def agent_email_tool(world: World) -> None:
    tool = {
        "name": "send_email",
        "type": "integration",
        "integration": {"provider": "email"},
    }
    await post(world, f"/agents/{world.agent['id']}/tools", tool)


def email_sent(to: str, sender: str) -> Check:
    """The SMTP fake received a message from `sender` to `to`."""

    async def check(world: World) -> None:
        sent = [(s, r) for s, r, _, _ in world.mailbox.messages]
        assert (sender, [to]) in sent, sent

    return check


async def docs_of(world: World, owner: str) -> list[dict[str, Any]]:
    response = await world.api.get(f"{owner}/docs", params={"limit": 100})
    assert response.status_code == 200, response.text
    return response.json()["items"]


async def storyline_saved(world: World) -> None:
    user_message = world.calls[-1].messages[-1]
    assert "User's name: Hamada" in _text(user_message["content"]), "metadata_filter picked the wrong user"
    titles = [d["title"] for d in await docs_of(world, f"/agents/{world.agent['id']}")]
    assert titles == ["Companion Storyline"], titles


async def situation_updated(world: World) -> None:
    session = (await world.api.get(f"/sessions/{world.vars['session']['id']}")).json()
    reply = echo(world.calls[-1]).content
    assert session["situation"] == f"You are Rosa, a companion.\n\n{reply}", session["situation"]
    partial = "session.update with only `situation` is a partial update"
    assert session["metadata"] == {"kept": "yes"} and session["users"] == [world.vars["user"]["id"]], partial


async def persona_doc_saved(world: World) -> None:
    docs = await docs_of(world, f"/users/{world.vars['user']['id']}")
    assert [d["title"] for d in docs] == ["User Persona"], docs


async def jina_docs_saved(world: World) -> None:
    docs = await docs_of(world, f"/agents/{world.agent['id']}")
    assert len(docs) == len(world.execution["output"]) > 0
    assert all(d["metadata"] == {"source": "jina_crawler"} and d["title"] == "Website Document" for d in docs)


async def sub_execution_started(world: World) -> None:
    child = (await world.api.get(f"/executions/{world.execution['output']['id']}")).json()
    assert child["task_id"] == world.vars["sub_task"]["id"], child
    done = await wait_for_status(world.api, child["id"])
    assert done["status"] == "succeeded", done


async def tool_call_waited(name: str, arguments: dict[str, Any], world: World) -> None:
    assert len(world.waits) == 1, world.waits
    call = world.waits[0]["tool_call"]
    assert call["name"] == name and call["arguments"] == arguments, call


async def new_syntax_prompts(world: World) -> None:
    first, second = world.calls
    contents = [_text(m["content"]) for m in first.messages]
    assert contents == ["Write me an article about the topic: durable agents", NO_DOLLAR], contents
    assert "The article should be 800 words long." in _text(second.messages[-1]["content"])


NO_DOLLAR = "this is only text, no need for dollar sign prefix"


def strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return [value] if isinstance(value, str) else []


async def log_rendered(text: str, world: World) -> None:
    """As in Julep: the rendered text of a log step goes to its transition's metadata."""
    metadata = [t.get("metadata") for t in world.transitions]
    assert text in strings(metadata), f"the rendered log text {text!r} is in no transition's metadata"


async def weather_key_from_metadata(world: World) -> None:
    (request,) = world.http
    assert dict(parse_qsl(urlsplit(request.path).query))["appid"] == "owm-key", request.path


async def foreach_log_passed_items(world: World) -> None:
    outputs = [t["output"] for t in world.transitions if isinstance(t["output"], dict)]
    assert {"results": ["apple", "pear"]} in outputs, "a log step's output is its input"


async def asked_for_name(world: World) -> None:
    assert "Please provide your name" in strings(world.waits[0]), world.waits


async def prompts_made(count: int, world: World) -> None:
    assert len(world.calls) == count, [c.model for c in world.calls]


# --- the corpus -------------------------------------------------------------------------------------------

HN = ("https://hacker-news.firebaseio.com",)
SCREENSHOT = "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAYAAAAf8/9hAAAACXBIWXMAAAsTAAALEwEAmpwYAAAA"

CASES: dict[str, Case] = {
    # cookbooks/advanced (SOURCES.md: the notebook's task_def; inputs are the notebook's executions.create)
    "cb00_email_assistant": Case(
        why=(
            "notebook input (from/to/subject/body); no agent docs, so the search returns none; the model "
            "answers the step-2 JSON; send_email is the `email` integration"
        ),
        input={
            "from": "ada@example.com",
            "to": "help@julep.ai",
            "subject": "Agents",
            "body": "How do I start?",
        },
        output={"success": True},
        model=email_model,
        smtp_host="smtp.mailgun.org",
        check=email_sent("ada@example.com", "postmaster@email.julep.ai"),
    ),
    "cb01_website_crawler": Case(
        why="notebook input {url}; step 0 is the `spider` integration (its fake crawls `limit` pages)",
        input={"url": "https://julep.ai"},
        output=lambda out: "# Page 0 of https://julep.ai # Page 1 of https://julep.ai" in out,
    ),
    "cb02_sarcastic_headline": Case(
        why="notebook input {topic}; step 0 is the `brave` integration",
        input={"topic": "elon musk"},
        output=lambda out: "'snippet': 'All about elon musk funny news.'" in out,
    ),
    "cb03_trip_planning": Case(
        why=(
            "notebook input {locations}; step 0 maps the `weather` integration, step 1 the `brave` one; the "
            "echo model's itinerary per location quotes both"
        ),
        input={"locations": ["New York", "London"]},
        output=lambda out: (
            "In New York, the current weather" in out["final_plan"]
            and "tourist attractions in London" in out["final_plan"]
        ),
    ),
    "cb04_reel_hook_generator": Case(
        why=(
            "notebook input {topic}; rapidapi host rewritten to a local fake returning two reels; the agent "
            "has the hooks doc the notebook uploads first; the model answers ```json blocks as in the "
            "recorded run"
        ),
        input={"topic": "real estate"},
        output=lambda out: len(out["summary"]) == len(out["hooks"]) == 2 and out["hooks"][0]["hooks"],
        web=rapidapi,
        hosts=("https://instagram-scraper-api2.p.rapidapi.com",),
        model=reels_model,
        setup=hooks_doc,
    ),
    "cb05_video_processing": Case(
        why=(
            "notebook input {video_url, public_id, transformation_prompt}; `cloudinary` media_upload runs "
            "against the local fake of Cloudinary's upload API (the notebook's placeholder key and secret, "
            "which the fake takes as Cloudinary would take real ones, and its signature checked); the model "
            "answers a ```json transformation list, uploaded again as the upload's `transformation`; the "
            "output is the second upload's URL"
        ),
        input={"video_url": "https://example.com/v.mp4", "public_id": "v1", "transformation_prompt": "crop"},
        output=lambda out: out["transformed_video_url"].endswith("/upload/v1700000000/v1.mp4"),
        model=video_model,
        check=video_transformed,
    ),
    "cb06_browser_use": Case(
        why=(
            "notebook input {goal}; its `browserbase` tools (create_session, get_live_urls) run against the "
            "local fake of Browserbase, whose session's connect_url names Browserbase's own host "
            "(wss://connect.browserbase.com, as Browserbase answers); `perform_browser_action` is "
            "`remote_browser`, which drives that browser over CDP, so its first navigate (step 6, to Google) "
            "fails: a navigate URL passes the egress check, and with no internet here its host does not "
            "resolve (with internet, Browserbase refuses the fake's session). tests/test_remote_browser.py "
            "drives remote_browser against a fake CDP browser"
        ),
        input={"goal": "find the julep docs"},
        outcome="failed",
        error=r"remote_browser cannot navigate there: cannot resolve|the browser refused the connection",
    ),
    "cb07_research_assistant": Case(
        why=(
            "notebook input {topics, user_id}; brave, arxiv and llama_parse run against the local fakes of "
            "their services (their keys are the notebook's placeholders, which the fakes take as Julep's "
            "services would take real ones); the user is found by a `ppid` equal to its own id (the notebook "
            "uses one value for both) and has a persona doc; the model answers the keywords, then two "
            "papers as `Title,url,,Title,url`; LlamaParse is given the papers' https URLs to download (the "
            "fake answers two pages each) and the parsed text is saved as the user's `Research Papers` doc"
        ),
        input=lambda w: {"topics": ["LLMs"], "user_id": w.vars["user"]["id"]},
        output=lambda out: out["title"] == "Research Papers",
        model=research_model,
        setup=research_user,
        check=research_papers_saved,
    ),
    "cb08_rag_jina_crawler": Case(
        why=(
            "notebook input {url, reducing_strength}; r.jina.ai rewritten to a local fake page; chunk_doc, "
            "the index_page yield, a context per chunk and agent.doc.create with a `data` body (SOURCES.md: "
            "execute_system unwraps `data`) make one agent doc per chunk"
        ),
        input={"url": "https://julep.ai", "reducing_strength": 2},
        output=lambda out: isinstance(out, list) and len(out) > 0,
        web=jina,
        hosts=("https://r.jina.ai",),
        check=jina_docs_saved,
    ),
    "cb09_companion_storyline": Case(
        why=(
            "notebook input {agent_id, user_ppid}; user.list with metadata_filter returns a list holding the "
            "user with that ppid (SOURCES.md: list operations return lists, filters apply); the storyline is "
            "saved as an agent doc through a `data` body"
        ),
        input=lambda w: {"agent_id": w.agent["id"], "user_ppid": "p-1"},
        output=lambda out: out["title"] == "Companion Storyline",
        setup=companion_users,
        check=storyline_saved,
    ),
    "cb09_companion_update_situation": Case(
        why=(
            "notebook input {session_id, user_input}; history entries carry `content` as a list of parts and "
            "session.update with only `situation` is partial (SOURCES.md system tools); the recorded run's "
            "finish output is the session"
        ),
        input=lambda w: {"session_id": w.vars["session"]["id"], "user_input": "I feel great"},
        output=lambda out: out["id"] and "situation" in out,
        setup=companion_session,
        check=situation_updated,
    ),
    "cb09_companion_user_persona": Case(
        why=(
            "notebook input {user_ppid, session_id}; steps 0-8 run (history parts, filtered user.list, `user:"
            " _[0]` is Python per SOURCES.md, user.doc.create with `data`); step 9 passes `about: $ "
            "steps[7]`, which in Julep v1 is {input, output}, not a string, so user.update refuses it"
        ),
        input=lambda w: {"user_ppid": "p-1", "session_id": w.vars["session"]["id"]},
        outcome="failed",
        error=r"about",
        setup=companion_session,
        check=persona_doc_saved,
    ),
    "cb_basics02_echo_task": Case(
        why=(
            "notebook input {'message': 'Julep rocks!'}; `$ input.message` names `input`, which Julep v1 "
            "never defines (evaluator names: _, inputs, outputs, steps, state, agent, ...), so Julep fails "
            "the step"
        ),
        input={"message": "Julep rocks!"},
        outcome="error",
        error=r"\binput\b",
    ),
    "cb_basics04_parallel_example": Case(
        why=(
            "notebook only creates it: `map:` with no top-level `over:` is no step Julep's schema knows (a "
            "map_reduce needs `over` and `map`), so Julep refuses the task"
        ),
        outcome="refused",
        error=r"main\[0\]",
    ),
    "tut_hn_newsletter": Case(
        why=(
            "tutorial input {min_score, num_stories, user_preferences}; HN host rewritten to a local fake "
            "(two stories, one over 50 points); steps 0-5 run (in Julep `inputs` is a dict keyed by step, so "
            "`inputs.get('min_score', 50)` is 50), then step 6 maps the `spider` integration (its local fake)"
        ),
        input={"min_score": 50, "num_stories": 10, "user_preferences": ["AI"]},
        web=hacker_news,
        hosts=HN,
        xfail=(
            'rule 4: a PEP 701 f-string reusing its quotes, `f"...{_["comment_id"]}..."`, refused at creation'
            " (main[9].map[0].arguments: 'f-string: unmatched '[''); other: `inputs` is a list in Mint but a "
            "dict keyed by step in Julep v1, so `inputs.get('min_score', 50)` fails (main[4]: 'attribute .get"
            " is not available on list')"
        ),
    ),
    # src/agents-api/tests/sample_tasks (older dialect, no `$`; SOURCES.md)
    "st_find_selector": Case(
        why=(
            "the input and model answer of upstream test 'workflow: execute yaml task', which expects "
            "success; the log step passes its input through (SOURCES.md), so the output is the evaluate's"
        ),
        input={
            "screenshot_base64": SCREENSHOT,
            "network_requests": [{"request": {}, "response": {"body": "Lady Gaga"}}],
            "parameters": ["name"],
        },
        output={
            "result": [
                {"value": "Gaga", "network_request": {"request": {}, "response": {"body": "Lady Gaga"}}}
            ]
        },
        model=says("found: true\nvalue: 'Gaga'"),
    ),
    "st_reclaim_example": Case(
        why=(
            "input {screenshot_base64, parameter_names}; the model answers a ```json block as the prompt "
            "asks; each result is parsed by load_json"
        ),
        input={"screenshot_base64": SCREENSHOT, "parameter_names": ["rating"]},
        output=[{"parsed_result": {"rating": "1500"}}],
        model=says('The rating is:\n```json\n{"rating": "1500"}\n```'),
        agent={"instructions": ["Read carefully.", "Answer in JSON."]},
        xfail=(
            "other: `{{agent.description}}` raises in Mint's templates (''dict object' has no attribute "
            "'description''); Julep agents have no `description` either, and Jinja's default Undefined "
            "rendered it empty"
        ),
    ),
    "st_simple_multi_step": Case(
        why=(
            "input {topics}; a foreach of prompts, a `log: _` that passes its input through (SOURCES.md), "
            "then the text of each completion"
        ),
        input={"topics": ["history", "music"]},
        output={
            "result": [
                f"echo: Generate a list of 10 questions for the topic {t} as valid yaml."
                for t in ("history", "music")
            ]
        },
    ),
    "st_simple_parameter_extractor": Case(
        why=(
            "as printed the file is mis-indented: `evaluate:` is null with `result:` beside it (SOURCES.md), "
            "so Julep's schema refuses the task"
        ),
        outcome="refused",
        error=r"main\[1\]\.evaluate",
    ),
    "st_simple_prompt": Case(
        why="input {topic} (the schema needs one property); the output is the chat completion",
        input={"topic": "the sea"},
        output=lambda out: out["choices"][0]["message"]["content"].endswith(
            "Write a short poem about the sea."
        ),
    ),
    "st_integration_example": Case(
        why=(
            "input {topics}; the `duckduckgo` integration is refused at creation (Julep's schema has no such "
            "provider either)"
        ),
        input={"topics": ["history"]},
        outcome="refused",
        error=r"tools\[1\]\.integration.*provider 'duckduckgo' is not available",
    ),
    # src/agents-api/tests/test_execution_workflow.py: the upstream test's input and assertion (SOURCES.md)
    "jt_yield_step": Case(
        why="upstream: input {test: input}, result['hello'] == 'input'",
        input={"test": "input"},
        output={"hello": "input"},
    ),
    "jt_return_step_direct": Case(
        why="upstream: result['value'] == 'input' (the first return ends the workflow)",
        input={"test": "input"},
        output={"value": "input"},
    ),
    "jt_return_step_nested": Case(
        why="upstream: result['value'] == 'input' (a return ends only the yielded workflow)",
        input={"test": "input"},
        output={"value": "input"},
    ),
    "jt_log_step": Case(
        why="upstream: result['hello'] == 'input' (a log step's output is its input)",
        input={"test": "input"},
        output={"hello": "input"},
        check=lambda w: log_rendered("input", w),
    ),
    "jt_log_step_expression_fail": Case(
        why="upstream: the run raises (`_['hell']` is not a key)",
        input={"test": "input"},
        outcome="failed",
        error=r"hell",
    ),
    "jt_system_list_agents": Case(
        why="upstream: the result is a list of at most 10 agent dicts, each with an id",
        output=lambda out: isinstance(out, list) and 0 < len(out) <= 10 and all("id" in a for a in out),
    ),
    "jt_wait_for_input": Case(
        why="upstream: the wait_for_input step starts; answered, its output is the answer",
        input={"test": "input"},
        answers=({"answer": "ok"},),
        output={"answer": "ok"},
    ),
    "jt_foreach_wait_for_input": Case(
        why="upstream: the foreach's wait starts; each of the three items waits and takes its answer",
        input={"test": "input"},
        answers=("a", "b", "c"),
        output=["a", "b", "c"],
    ),
    "jt_if_else_step": Case(
        why="upstream: result['hello'] in 0..10 (the else branch, random.randint)",
        input={"test": "input"},
        output=lambda out: out["hello"] in range(11),
    ),
    "jt_switch_step": Case(
        why="upstream: result['hello'] == 'world' (the first true case)",
        input={"test": "input"},
        output={"hello": "world"},
    ),
    "jt_foreach_step": Case(
        why="upstream: result[0]['hello'] == 'world'",
        input={"test": "input"},
        output=[{"hello": "world"}] * 3,
    ),
    "jt_map_reduce_parallel3": Case(
        why="upstream: [r['res'] for r in result] == ['a!', 'b!', 'c!', 'd!']",
        input={"test": "input"},
        output=[{"res": "a!"}, {"res": "b!"}, {"res": "c!"}, {"res": "d!"}],
    ),
    "jt_prompt_python_expression": Case(
        why="upstream: the mocked reply 'Hello, world!' comes back as choices[0].message (role assistant)",
        input={"test": "input"},
        output=lambda out: (
            out["choices"][0]["message"]["content"] == "Hello, world!"
            and out["choices"][0]["message"]["role"] == "assistant"
        ),
        model=says("Hello, world!"),
    ),
    "jt_prompt_unwrap": Case(
        why="upstream: result == 'Hello, world!' (unwrap gives the text)",
        input={"test": "input"},
        output="Hello, world!",
        model=says("Hello, world!"),
    ),
    "jt_set_and_get": Case(
        why="upstream: result == 'test_value'",
        input={"test": "input"},
        output="test_value",
    ),
    "jt_api_call_httpbin": Case(
        why="upstream: result['hello'] == 'input'; httpbin.org rewritten to a local fake echoing the query",
        input={"test": "input"},
        output={"hello": "input"},
        web=httpbin,
        hosts=("https://httpbin.org",),
    ),
    # documentation/**.mdx (SOURCES.md)
    "doc_tasks_summarize_document": Case(
        why="docs input {document_text}; a short summary (under 500 characters) takes the else branch",
        input={"document_text": "Mint is a durable workflow engine."},
        output={"content": "A short summary."},
        model=says("A short summary."),
    ),
    "doc_tasks_sub_workflow": Case(
        why="docs: main yields `topic: AI` (a literal) to a prompt whose completion is the output",
        output=lambda out: out["choices"][0]["message"]["content"] == "echo: Tell me a joke about AI:",
    ),
    "doc_tasks_handle_support_request": Case(
        why=(
            "docs: the agent owns the `send_email` email integration the task inherits (its setup names no "
            "server, so MINT_SMTP_HOST, the local SMTP fake, is used); the prompt runs, then send_email"
        ),
        input={"customer_email": "ada@example.com", "subject": "Refund", "body": "Please refund me."},
        output={"success": True},
        setup=agent_email_tool,
        check=email_sent("ada@example.com", "support@julep.ai"),
    ),
    "doc_tasks_weather_inline_tool": Case(
        why="docs: `location: New York` is a literal (SOURCES.md rule); the `weather` integration",
        output=lambda out: out["result"].startswith("In New York, the current weather is as follows:"),
    ),
    "doc_steps_multi_step_demo": Case(
        why="docs input {topic}; the prompt runs, then the foreach calls the `brave` integration",
        input={"topic": "quantum computing"},
        output=lambda out: out["topic"] == "quantum computing" and "Summary" not in out["summary"],
    ),
    "doc_steps_subworkflow": Case(
        why="docs: the subworkflow returns {result: 'This is the subworkflow'} (literals), read via steps[1]",
        output={"subworkflow_result": "This is the subworkflow"},
    ),
    "doc_tools_wikipedia_integration": Case(
        why='docs: `query: "Julep"` is a literal (SOURCES.md rule); the `wikipedia` integration',
        output=lambda out: out["documents"][0]["metadata"]["title"] == "Julep",
    ),
    "doc_tools_api_call_weather": Case(
        why=(
            "docs input {location}; openweathermap rewritten to a local fake; `$ metadata.weather_api_key` "
            "names `metadata`, which Julep v1's evaluator never defines, so Julep fails the step. A deliberate "
            "difference: Mint gives a task the merged metadata (execution > task > agent) as seed 000 says, "
            "so the call goes out with the agent's key, as the docs' comment intends"
        ),
        input={"location": "London"},
        output=lambda o: o["json"]["name"] == "London",
        check=weather_key_from_metadata,
        web=weather,
        hosts=("https://api.openweathermap.org",),
        agent={"metadata": {"weather_api_key": "owm-key"}},
    ),
    "doc_tools_function_send_notification": Case(
        why=(
            "docs: a function tool pauses the execution (awaiting_input) until the client answers; the answer"
            " is the step's output"
        ),
        answers=({"delivered": True},),
        output={"delivered": True},
        check=lambda w: tool_call_waited("send_notification", {"content": "hi"}, w),
    ),
    "doc_tools_function_add_numbers": Case(
        why="docs: the client sees awaiting_input, runs add_numbers(15, 27) and resumes with {result: 42}",
        answers=({"result": 42},),
        output={"result": 42},
        check=lambda w: tool_call_waited("add_numbers", {"a": 15, "b": 27}, w),
    ),
    "doc_tools_auto_run_research": Case(
        why=(
            "docs: the prompt is a template naming `{{topic}}`, which Julep v1 turns into an f-string over "
            "names that never include `topic` (SOURCES.md rule), so Julep fails the step before any tool runs"
        ),
        input={"topic": "AI agents"},
        outcome="error",
        error=r"topic",
        model=says("Done."),
    ),
    "doc_tools_system_execution_create": Case(
        why=(
            "docs input {sub_task_id}; task.execution.create unwraps `data` (SOURCES.md) and returns the new "
            "execution, which runs"
        ),
        input=lambda w: {"sub_task_id": w.vars["sub_task"]["id"]},
        output=lambda out: bool(out["id"]),
        setup=sub_task,
        check=sub_execution_started,
    ),
    "doc_tools_system_list_agent_docs": Case(
        why=(
            "docs (SOURCES.md): the step calls `list_agents`, which the task never defines, so Julep fails "
            "('Tool list_agents not found in the toolset')"
        ),
        outcome="error",
        error=r"list_agents",
    ),
    "doc_frag_set_get_label": Case(
        why=(
            "our input {results, count}: Julep evaluates each `set` value against the same `_`, so `_.count` "
            "reads the input; a `get` of a key never set is None in Julep (memo default)"
        ),
        input={"results": [1, 2, 3], "count": 3},
        output={
            "greeting": "Hello, John!",
            "data_status": "Has data: True, Count: 3",
            "label_user_name": "John",
            "label_count": 3,
            "label_has_data": True,
            "got": None,
        },
    ),
    "doc_frag_wait_for_input": Case(
        why="docs: two waits, answered in turn; the output is the last answer",
        answers=({"name": "Ada"}, {"age": 36}),
        output={"age": 36},
        check=asked_for_name,
    ),
    "doc_frag_switch": Case(
        why="our input {category: B}: the second case's log runs and passes its input through (SOURCES.md)",
        input={"category": "B"},
        output={"category": "B"},
        check=lambda w: log_rendered("Category B", w),
    ),
    "doc_frag_if_else": Case(
        why="docs: both conditions hold, so the inner then runs; `x: y` is a literal (SOURCES.md rule)",
        output={"x": "y"},
    ),
    "doc_frag_foreach_log_map_reduce": Case(
        why="our input {items}; each log passes its item through, so `results` is the items and count 2",
        input={"items": ["apple", "pear"]},
        output={"count": 2},
        check=foreach_log_passed_items,
    ),
    "doc_frag_sleep_return": Case(
        why=(
            "our input {value: 42}; a durable sleep, then `return` ends the workflow before the error. The sleep's "
            "30 s are 1 s here: CI's time (days-long durable sleeps: tests/test_long_runs.py, time-skipping)"
        ),
        input={"value": 42},
        output=42,
        edits=(("seconds: 30", "seconds: 1"),),
    ),
    "doc_frag_error": Case(
        why="docs: the error step fails the execution with its message",
        outcome="failed",
        error=r"Invalid input provided",
    ),
    "doc_frag_evaluate_multiple": Case(
        why=(
            "our input {numbers, total, average}: Julep evaluates every key against the same `_`, so "
            "`_.total` and `_.average` read the input"
        ),
        input={"numbers": [1, 2, 3, 4], "total": 10, "average": 2.5},
        output={"total": 10, "average": 2.5, "formatted": "Average: 2.50"},
    ),
    "doc_frag_prompt_variants": Case(
        why=(
            "docs: five prompts; the last (json_schema) returns the completion, whose content is the product "
            "JSON the fake model gives"
        ),
        output=lambda out: json.loads(out["choices"][0]["message"]["content"])["product_name"] == "Widget",
        model=jsonish,
        check=lambda w: prompts_made(5, w),
    ),
    "doc_expr_functions": Case(
        why=(
            "our input {json_string, yaml_string}; json.loads, yaml.safe_load, extract_json (Julep's "
            "evaluator)"
        ),
        input={"json_string": '{"a": 1}', "yaml_string": "b: 2"},
        output={"data": {"a": 1}, "config": {"b": 2}, "extracted_content": {"key": "value"}},
    ),
    "doc_expr_csv": Case(
        why="docs: csv.reader over a string (Julep's evaluator `csv` module)",
        output={"csv_data": [["a", "b", "c"], ["1", "2", "3"]]},
    ),
    "doc_expr_new_syntax": Case(
        why=(
            "our input {a, b, c, topic, article_length}; steps[0].input, an f-string and a plain-text "
            "message, then a triple-quoted f-string"
        ),
        input={"a": 1, "b": 2, "c": 3, "topic": "durable agents", "article_length": 800},
        output=lambda out: out.startswith("echo:") and "800 words long" in out,
        check=new_syntax_prompts,
    ),
    "doc_sdk_parallel_complex_task": Case(
        why=(
            "docs (SOURCES.md): step 1 calls `web_search`, never defined, so Julep fails there (and its "
            "parallel step raises 'Not implemented')"
        ),
        input={"data": "1,2,3", "search_query": "agents", "scores": [1], "score": 1, "items": []},
        outcome="error",
        error=r"web_search",
    ),
}


# --- running a case ---------------------------------------------------------------------------------------


def corpus_files() -> list[str]:
    return sorted(p.stem for p in CORPUS.glob("*.yaml"))


def params() -> list[Any]:
    """One test per corpus file; a case that differs from Julep today is a strict xfail."""
    missing = set(corpus_files()) ^ set(CASES)
    assert not missing, f"every corpus file needs exactly one case: {sorted(missing)}"
    return [pytest.param(name, marks=marks(CASES[name]), id=name) for name in corpus_files()]


def marks(case: Case) -> list[Any]:
    return [pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else []


def task_text(name: str, agent_id: str, web_url: str, hosts: tuple[str, ...], smtp_port: int = 0) -> str:
    text = (CORPUS / f"{name}.yaml").read_text().replace("__AGENT_ID__", agent_id)
    for host in hosts:
        text = text.replace(host, web_url.rstrip("/"))
    for old, new in CASES[name].edits:
        assert old in text, f"{name}: the edit of {old!r} finds nothing"
        text = text.replace(old, new)
    smtp_host = CASES[name].smtp_host
    if smtp_host:
        text = text.replace(f"host: {smtp_host}", "host: 127.0.0.1").replace(
            "port: 587", f"port: {smtp_port}"
        )
    return text


async def create_task(world: World, name: str, text: str, base_url: str, key: str) -> tuple[int, str, str]:
    """(status, body, task id). Cookbook tasks are created as their notebooks do, with the julep SDK
    (`tasks.create(agent_id, **task_def)`; SDK 2.x takes extra workflows through `extra_body`); the rest are
    posted as YAML."""
    agent_id = world.agent["id"]
    if not name.startswith("cb"):
        response = await world.api.post(
            f"/agents/{agent_id}/tasks", content=text, headers={"Content-Type": "application/yaml"}
        )
        return response.status_code, response.text, response.json().get("id", "")
    definition = yaml.safe_load(text)
    known = {"name", "description", "input_schema", "tools", "inherit_tools", "metadata", "main"}
    others = {k: v for k, v in definition.items() if k not in known}
    async with AsyncJulep(api_key=key, base_url=base_url, max_retries=0) as client:
        try:
            task = await client.tasks.create(
                agent_id, **{k: v for k, v in definition.items() if k in known}, extra_body=others or None
            )
        except APIStatusError as exc:
            return exc.status_code, exc.response.text, ""
    return 201, "", task.id


async def last_wait(world: World) -> dict[str, Any]:
    waits = [t for t in await transitions(world.api, world.execution["id"]) if t["type"] == "wait"]
    return waits[-1] if waits else {}


async def run_to_end(world: World, case: Case) -> dict[str, Any]:
    """Waits for the end, answering each wait with the next of `case.answers` as the source's client does."""
    answers = list(case.answers)
    answered: set[str] = set()
    while True:
        execution = await wait_for_status(world.api, world.execution["id"], TERMINAL | {"awaiting_input"})
        if execution["status"] in TERMINAL:
            assert not answers, f"the run ended with answers left over: {answers}"
            return execution
        wait = await last_wait(world)
        if wait.get("id") in answered:  # the resume is on its way; this is the wait already answered
            await asyncio.sleep(0.05)
            continue
        assert answers, f"the run waits for input the source never gives: {wait.get('output')}"
        world.waits.append(wait["output"])
        answered.add(wait["id"])
        body = {"status": "running", "input": answers.pop(0)}
        resumed = await world.api.put(f"/executions/{world.execution['id']}", json=body)
        assert resumed.status_code == 200, resumed.text


def check_output(case: Case, output: Any) -> None:
    if case.output is ANY:
        return
    if callable(case.output):
        assert case.output(output), f"unexpected output: {output!r}"
    else:
        assert output == case.output


def resolve(value: Any, world: World) -> Any:
    return value(world) if callable(value) else value


@pytest.mark.parametrize("name", params())
async def test_julep_task_runs_as_julep_runs_it(
    name: str, mapi, model_stack, model_server, script, api_key, integration_fakes
):
    case = CASES[name]
    script.reply = case.model or echo
    agent = await create_agent(mapi, "julep-corpus")
    fields = {"about": "an agent that runs Julep's own tasks", "model": "gpt-4o-mini", **case.agent}
    updated = await mapi.patch(f"/agents/{agent['id']}", json=fields)
    assert updated.status_code == 200, updated.text
    world = World(mapi, updated.json(), model_server.calls, mailbox=integration_fakes.mailbox)
    if case.setup:
        await case.setup(world)
    with LocalServer(case.web or (lambda _: (404, {}, b""))) as web:
        world.http = web.requests
        text = task_text(name, world.agent["id"], web.url, case.hosts, integration_fakes.smtp_port)
        status, body, task_id = await create_task(world, name, text, model_stack.url, api_key)
        if case.outcome == "refused" or (case.outcome == "error" and status >= 400):
            assert 400 <= status < 500, f"Julep refuses this task; Mint answered {status}: {body}"
            assert re.search(case.error, body), body
            return
        assert status == 201, f"task creation answered {status}: {body}"
        started = await mapi.post(f"/tasks/{task_id}/executions", json={"input": resolve(case.input, world)})
        assert started.status_code == 201, started.text
        world.execution = started.json()
        world.execution = await run_to_end(world, case)
    world.transitions = await transitions(mapi, world.execution["id"])
    check_outcome(case, world.execution)
    if case.check:
        await case.check(world)


def check_outcome(case: Case, execution: dict[str, Any]) -> None:
    status, error = execution["status"], execution.get("error") or ""
    if case.outcome == "succeeded":
        assert status == "succeeded", f"{status}: {error}"
        check_output(case, execution["output"])
    else:  # failed, or `error` once the task was accepted
        assert status == "failed", f"{status}; output {execution.get('output')!r}"
        assert re.search(case.error, error), error
