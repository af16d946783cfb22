"""Conformance: every method of the official julep SDK (2.21, sync client) against a real Mint stack.

The methods are listed from the SDK itself at test time, so a method the SDK adds and no entry here calls
fails `test_every_sdk_method_is_called`. Each answer must be an instance of the type the method declares, and
its JSON must validate as the SDK's own model with no required field missing or null. What Mint does not
serve yet (NOT_SERVED) or serves wrongly (KNOWN_FAILING) is listed with what goes wrong, and asserted to still
fail, so both lists only shrink.
"""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import Callable, Iterator
from functools import cached_property
from typing import Any

import httpx
import pytest
from julep import APIStatusError, Julep

from tests.sdk_methods import (
    bound_methods,
    declared_return,
    problems,
    sdk_methods,
    wait_doc_indexed,
    wait_execution,
)

ASK: dict[str, Any] = {
    "name": "ask",
    "description": "Asks for a number and doubles it.",
    "input_schema": {"type": "object", "properties": {"name": {"type": "string"}}},
    "main": [
        {"evaluate": {"question": "$ 'What is your favourite number?'"}},
        {"wait_for_input": {"info": {"question": "$ _.question"}}},
        {"return": {"doubled": "$ _.number * 2"}},
    ],
}
LOOKUP: Any = {
    "description": "look up",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
}
HELLO: Any = [{"role": "user", "content": "hello"}]


class World:
    """What the calls need, each made on first use, as one new developer (so nothing is shared)."""

    def __init__(self, client: Julep, responses: list[httpx.Response]):
        self.client = client
        self.responses = responses  # every HTTP answer, for the JSON behind the SDK's parsed one

    @cached_property
    def agent(self) -> Any:
        return self.client.agents.create(name="Jessica", about="a tutor", model="gpt-4o-mini")

    @cached_property
    def user(self) -> Any:
        return self.client.users.create(name="Ada", about="a mathematician")

    @cached_property
    def session(self) -> Any:
        return self.client.sessions.create(agent=self.agent.id, user=self.user.id, situation="Tutoring.")

    @cached_property
    def task(self) -> Any:
        return self.client.tasks.create(self.agent.id, **ASK)

    @cached_property
    def execution(self) -> Any:
        """An execution waiting for input: it has transitions, and can still change status."""
        execution = self.client.executions.create(self.task.id, input={"name": "Mint"})
        return wait_execution(self.client, execution.id, {"awaiting_input", "failed"})

    @cached_property
    def finished(self) -> Any:
        """The waiting execution, resumed to its end (streams of it then end by themselves)."""
        self.client.executions.change_status(self.execution.id, status="running", input={"number": 21})
        return wait_execution(self.client, self.execution.id)

    @cached_property
    def transition(self) -> Any:
        return self.client.executions.transitions.list(self.execution.id).items[0]

    @cached_property
    def tool(self) -> Any:
        return self.client.agents.tools.create(self.agent.id, name="lookup", type="function", function=LOOKUP)

    @cached_property
    def agent_doc(self) -> Any:
        doc = self.client.agents.docs.create(self.agent.id, title="Refunds", content="Refunds take 5 days.")
        wait_doc_indexed(self.client, doc.id)
        return doc

    @cached_property
    def user_doc(self) -> Any:
        doc = self.client.users.docs.create(
            self.user.id, title="Notes", content="Ada likes induction.", metadata={"topic": "notes"}
        )
        wait_doc_indexed(self.client, doc.id)
        return doc

    @cached_property
    def secret(self) -> Any:
        return self.client.secrets.create(name="SDK_SECRET", value="canary-5e1f", description="for the SDK")

    @cached_property
    def file(self) -> Any:
        content = base64.b64encode(b"hello").decode()
        return self.client.files.create(content=content, name="hello.txt", mime_type="text/plain")


def _plain_chat(w: World) -> Any:
    return w.client.sessions.chat(w.session.id, messages=HELLO)


def _chat(w: World) -> Any:
    # Both forms of the one method. The plain answer is checked here, so a fault of the stream cannot hide
    # one of it; the stream is what the test then reads to its end, checking every chunk.
    plain = _plain_chat(w)
    found = problems(
        "sessions.chat(stream=False)", plain, declared_return(w.client.sessions.chat), _last_body(w)
    )
    assert not found, "\n".join(found)
    return w.client.sessions.chat(w.session.id, messages=HELLO, stream=True)


def _change_status(w: World) -> Any:
    return w.client.executions.change_status(w.execution.id, status="running", input={"number": 2})


# One call of each SDK method, with the arguments a real program passes. `w.x and ...` makes x first, so a
# list or a search has something to find.
REGISTRY: dict[str, Callable[[World], Any]] = {
    "agents.create": lambda w: w.client.agents.create(
        name="Ann", instructions=["be brief"], metadata={"a": 1}
    ),
    "agents.create_or_update": lambda w: w.client.agents.create_or_update(str(uuid.uuid4()), name="Bo"),
    "agents.delete": lambda w: w.client.agents.delete(w.agent.id),
    "agents.get": lambda w: w.client.agents.get(w.agent.id),
    "agents.list": lambda w: w.agent and w.client.agents.list(limit=10),
    "agents.list_models": lambda w: w.client.agents.list_models(),
    "agents.reset": lambda w: w.client.agents.reset(w.agent.id, name="Jess", model="gpt-4o-mini"),
    "agents.update": lambda w: w.client.agents.update(w.agent.id, about="a patient tutor"),
    "agents.docs.bulk_delete": lambda w: (
        w.agent_doc and w.client.agents.docs.bulk_delete(w.agent.id, delete_all=True)
    ),
    "agents.docs.create": lambda w: w.client.agents.docs.create(w.agent.id, title="T", content="Some text."),
    "agents.docs.delete": lambda w: w.client.agents.docs.delete(w.agent_doc.id, agent_id=w.agent.id),
    "agents.docs.list": lambda w: w.agent_doc and w.client.agents.docs.list(w.agent.id),
    "agents.docs.search": lambda w: w.agent_doc and w.client.agents.docs.search(w.agent.id, text="refund"),
    "agents.tools.create": lambda w: w.client.agents.tools.create(
        w.agent.id, name="fetch", type="api_call", api_call={"method": "GET", "url": "https://example.com"}
    ),
    "agents.tools.delete": lambda w: w.client.agents.tools.delete(w.tool.id, agent_id=w.agent.id),
    "agents.tools.list": lambda w: w.tool and w.client.agents.tools.list(w.agent.id),
    "agents.tools.reset": lambda w: w.client.agents.tools.reset(
        w.tool.id, agent_id=w.agent.id, name="find", type="function", function=LOOKUP
    ),
    "agents.tools.update": lambda w: w.client.agents.tools.update(
        w.tool.id, agent_id=w.agent.id, description="Find anything"
    ),
    "docs.embed": lambda w: w.client.docs.embed(text="hello world"),
    "docs.get": lambda w: w.client.docs.get(w.agent_doc.id),
    "executions.change_status": _change_status,
    "executions.create": lambda w: w.client.executions.create(w.task.id, input={"name": "x"}),
    "executions.get": lambda w: w.client.executions.get(w.execution.id),
    "executions.list": lambda w: w.execution and w.client.executions.list(w.task.id),
    "executions.status.get": lambda w: w.client.executions.status.get(w.execution.id),
    "executions.status.stream": lambda w: w.client.executions.status.stream(w.finished.id),
    "executions.transitions.list": lambda w: w.client.executions.transitions.list(w.execution.id),
    "executions.transitions.retrieve": lambda w: w.client.executions.transitions.retrieve(
        w.transition.id, execution_id=w.execution.id
    ),
    "executions.transitions.stream": lambda w: w.client.executions.transitions.stream(w.finished.id),
    "files.create": lambda w: w.file,
    "files.delete": lambda w: w.client.files.delete(w.file.id),
    "files.get": lambda w: w.client.files.get(w.file.id),
    "files.list": lambda w: w.client.files.list(),
    "healthz.check": lambda w: w.client.healthz.check(),
    "jobs.get": lambda w: w.client.jobs.get(w.execution.id),  # an execution's workflow is a job
    "projects.create": lambda w: w.client.projects.create(name="Mint project"),
    "projects.list": lambda w: w.client.projects.list(),
    "secrets.create": lambda w: w.secret,
    "secrets.delete": lambda w: w.client.secrets.delete(w.secret.id),
    "secrets.list": lambda w: w.secret and w.client.secrets.list(),
    "secrets.update": lambda w: w.client.secrets.update(w.secret.id, name="SDK_SECRET_2", value="other"),
    "sessions.chat": _chat,
    "sessions.create": lambda w: w.client.sessions.create(agent=w.agent.id, situation="Helping."),
    "sessions.create_or_update": lambda w: w.client.sessions.create_or_update(
        str(uuid.uuid4()), agent=w.agent.id
    ),
    "sessions.delete": lambda w: w.client.sessions.delete(w.session.id),
    "sessions.get": lambda w: w.client.sessions.get(w.session.id),
    "sessions.history": lambda w: _plain_chat(w) and w.client.sessions.history(w.session.id),
    "sessions.list": lambda w: w.session and w.client.sessions.list(),
    "sessions.render": lambda w: w.client.sessions.render(w.session.id, messages=HELLO),
    "sessions.reset": lambda w: w.client.sessions.reset(w.session.id, situation="Reset."),
    "sessions.update": lambda w: w.client.sessions.update(w.session.id, metadata={"topic": "proofs"}),
    "tasks.create": lambda w: w.task,
    "tasks.create_or_update": lambda w: w.client.tasks.create_or_update(
        str(uuid.uuid4()), agent_id=w.agent.id, **ASK
    ),
    "tasks.get": lambda w: w.client.tasks.get(w.task.id),
    "tasks.list": lambda w: w.task and w.client.tasks.list(w.agent.id),
    "users.create": lambda w: w.user,
    "users.create_or_update": lambda w: w.client.users.create_or_update(str(uuid.uuid4()), name="Grace"),
    "users.delete": lambda w: w.client.users.delete(w.user.id),
    "users.get": lambda w: w.client.users.get(w.user.id),
    "users.list": lambda w: w.user and w.client.users.list(),
    "users.reset": lambda w: w.client.users.reset(w.user.id, name="Ada L."),
    "users.update": lambda w: w.client.users.update(w.user.id, about="an analyst"),
    "users.docs.bulk_delete": lambda w: (
        w.user_doc and w.client.users.docs.bulk_delete(w.user.id, metadata_filter={"topic": "notes"})
    ),
    "users.docs.create": lambda w: w.client.users.docs.create(w.user.id, title="T", content="Some text."),
    "users.docs.delete": lambda w: w.client.users.docs.delete(w.user_doc.id, user_id=w.user.id),
    "users.docs.list": lambda w: w.user_doc and w.client.users.docs.list(w.user.id),
    "users.docs.search": lambda w: w.user_doc and w.client.users.docs.search(w.user.id, text="induction"),
}

# Methods whose routes Mint does not have: the SDK gets Mint's 404 "Not Found" for an unknown path.
NOT_SERVED: dict[str, str] = {}

# Methods Mint serves, but not as the SDK expects: (what goes wrong, exactly; a problem the check must still
# report). A known failure that stops, or turns into another, fails its test: the list only shrinks.
KNOWN_FAILING: dict[str, tuple[str, str]] = {}


@pytest.fixture
def world(model_stack: Any, api_key: str) -> Iterator[World]:
    # The model stack: its scripted model answers chats. max_retries=0: a failure shows at once.
    responses: list[httpx.Response] = []
    http = httpx.Client(event_hooks={"response": [responses.append]}, timeout=60)
    with Julep(api_key=api_key, base_url=model_stack.url, max_retries=0, http_client=http) as client:
        yield World(client, responses)


def _last_body(w: World) -> Any:
    """The JSON of the last answer read whole (a stream's is read as the test iterates it)."""
    last = w.responses[-1]
    if not last.is_stream_consumed or "json" not in last.headers.get("content-type", ""):
        return None
    return last.json()


def _check(w: World, name: str) -> None:
    method = bound_methods(w.client)[name]
    answer = REGISTRY[name](w)
    body = _last_body(w)
    found = problems(name, answer, declared_return(method), body)
    assert not found, "\n".join([*found, f"answer: {answer!r:.300}", f"body: {body!r:.300}"])


def test_every_sdk_method_is_called() -> None:
    with Julep(api_key="unused", base_url="http://127.0.0.1:9") as client:
        listed = set(sdk_methods(client))
    uncalled, gone = listed - set(REGISTRY) - set(NOT_SERVED), set(REGISTRY) - listed
    assert (uncalled, gone) == (set(), set()), "a new SDK method needs a call in REGISTRY"
    assert listed == set(REGISTRY) | set(NOT_SERVED)
    assert set(NOT_SERVED) <= set(REGISTRY), "a not-served method still needs a call, to see it fail"
    assert set(KNOWN_FAILING) <= set(REGISTRY) - set(NOT_SERVED)


def _check_known_failing(w: World, name: str) -> None:
    what, sign = KNOWN_FAILING[name]
    with pytest.raises(AssertionError) as caught:
        _check(w, name)
    assert sign in str(caught.value), f"{name} now fails otherwise than known ({what}): {caught.value}"


@pytest.mark.parametrize("name", sorted(set(REGISTRY) - set(NOT_SERVED)))
async def test_sdk_method_answers_its_declared_type(world: World, name: str) -> None:
    check = _check_known_failing if name in KNOWN_FAILING else _check
    await asyncio.wait_for(asyncio.to_thread(check, world, name), 180)


def _refused(w: World, name: str) -> None:
    with pytest.raises(APIStatusError) as caught:
        REGISTRY[name](w)
    assert caught.value.status_code in (404, 405), caught.value
    body: Any = caught.value.body
    assert body["error"]["message"] in ("Not Found", "Method Not Allowed"), (
        body
    )  # no route, not a missing row


@pytest.mark.parametrize("name", sorted(NOT_SERVED))
async def test_not_served_methods_are_still_refused(world: World, name: str) -> None:
    await asyncio.wait_for(asyncio.to_thread(_refused, world, name), 60)
