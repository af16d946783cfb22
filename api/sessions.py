"""Sessions: checking who takes part, and chat (context assembly, the model call, the history)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from temporalio.client import Client, WorkflowFailureError
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import ActivityError, ApplicationError, WorkflowAlreadyStartedError

from api import schemas
from api.errors import ApiError, not_found
from api.limits import ChatSlots
from contracts.background import RunToolRequest, SessionRef
from contracts.calls import Owner
from contracts.temporal import COMPRESS_SESSION_WORKFLOW, RUN_TOOL_WORKFLOW
from mint.context import Context, ContextTooLarge, count_tokens, fit, metadata_layers, render_system
from mint.models.client import ModelClient, OnText
from mint.models.embeddings import Embedder
from mint.store.chat_turns import ChatTurns, SessionBusy
from mint.store.docs import DocStore, SearchQuery
from mint.store.tables import AGENTS, USERS, Store
from workflows import prompts
from workflows.language import ToolDef
from workflows.storable import find_unstorable, format_path

# Chats in one session are serialised: a second waits up to this long for the first, then gets a 409.
CHAT_TURN_WAIT_SECONDS = 30.0
DEFAULT_RECALL = {"mode": "hybrid", "limit": 3}
ADAPTIVE_START = 0.6  # adaptive sessions compress once the context passes this share of the budget


async def participants(store: Store, developer: str, body: schemas.SessionCreate) -> dict[str, list[str]]:
    """The session's agents and users, each checked to be the caller's (404 otherwise)."""
    agents = ([body.agent] if body.agent else []) + (body.agents or [])
    users = ([body.user] if body.user else []) + (body.users or [])
    if not agents:
        raise ApiError(422, "a session needs at least one agent (`agent` or `agents`)")
    for kind, table, ids in (("agent", AGENTS, agents), ("user", USERS, users)):
        for id_ in ids:
            if await _row(store, table, developer, id_) is None:
                raise not_found(kind, id_)
    return {"agents": list(dict.fromkeys(agents)), "users": list(dict.fromkeys(users))}


async def _row(store: Store, table: Any, developer: str, id_: str) -> dict[str, Any] | None:
    try:
        return await store.get(table, developer, str(uuid.UUID(id_)))
    except ValueError:
        return None


@dataclass
class Cast:
    """One agent's turn: the agent, the session's users, the agent's tool rows, every tool spec offered
    (the agent's and the request's) by name, and the arguments x-tool-parameters fixes for each."""

    agent: dict[str, Any]
    users: list[dict[str, Any]]
    agent_tools: list[dict[str, Any]]
    specs: dict[str, dict[str, Any]]
    fixed: dict[str, dict[str, Any]]


class Chatter:
    """What a chat needs: the store, the docs for recall, the embedder and the model client."""

    def __init__(
        self,
        store: Store,
        docs: DocStore,
        embedder: Embedder,
        models: ModelClient,
        temporal: Client,
        task_queue: str,
        slots: ChatSlots,
        max_tool_timeout: float | None = None,
    ):
        self.store = store
        self.slots = slots
        self.turns = ChatTurns(store.pool)
        self.docs = docs
        self.embedder = embedder
        self.models = models
        self.temporal = temporal
        self.task_queue = task_queue
        self.max_tool_timeout = max_tool_timeout  # MINT_MAX_TOOL_TIMEOUT_SECONDS

    async def _maybe_compress(self, developer: str, session: dict[str, Any], context: Context) -> None:
        """`adaptive`: past ADAPTIVE_START of the budget, fold older messages into the summary in the
        background (one compression per session at a time); until it lands, truncation keeps chat going."""
        budget = session["token_budget"]
        if (
            session["context_overflow"] != "adaptive"
            or not budget
            or context.wanted < ADAPTIVE_START * budget
        ):
            return
        with contextlib.suppress(WorkflowAlreadyStartedError):
            await self.temporal.start_workflow(
                COMPRESS_SESSION_WORKFLOW,
                SessionRef(developer_id=developer, session_id=session["id"]),
                id=f"compress-session-{developer}-{session['id']}",
                task_queue=self.task_queue,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
            )

    async def cast(
        self, developer: str, session: dict[str, Any], agent: dict[str, Any], body: schemas.Chat
    ) -> Cast:
        """Who takes part in one agent's turn and with which tools, read once per turn."""
        users = [u for u in [await _row(self.store, USERS, developer, i) for i in session["users"]] if u]
        agent_tools = await self.store.agent_tools(developer, agent["id"])
        specs = {t["spec"]["name"]: t["spec"] for t in agent_tools}
        for extra in body.tools or []:
            spec = ToolDef.model_validate(extra).model_dump(mode="json", by_alias=True, exclude_none=True)
            specs[spec["name"]] = spec
        # x-tool-parameters: session over user over agent.
        layers = [agent.get("metadata"), *(u.get("metadata") for u in users), session.get("metadata")]
        fixed = {name: prompts.fixed_arguments(spec, layers) for name, spec in specs.items()}
        return Cast(agent, users, agent_tools, specs, fixed)

    async def prepare(
        self, developer: str, session: dict[str, Any], body: schemas.Chat, cast: Cast
    ) -> tuple[Context, list[dict[str, Any]]]:
        """The context to send (its messages, and how many history messages it left out) and the docs
        recalled."""
        agent, users, tools = cast.agent, cast.users, cast.agent_tools
        new = [m.model_dump(exclude_none=True) for m in body.messages]
        docs = await self._recall(developer, session, agent, users, new) if body.recall else []
        summary, history = await self.history(developer, session["id"])
        scope = {
            "agent": agent,
            "user": users[0] if users else None,
            "users": users,
            "session": session,
            "situation": session["situation"],
            "summary": summary,
            "tools": [{"name": t["name"], "type": t["type"], "description": t["description"]} for t in tools],
            "docs": [{"title": d["title"], "content": d["snippet"]["content"]} for d in docs],
            "metadata": metadata_layers(
                agent.get("metadata"), *(u.get("metadata") for u in users), session.get("metadata")
            ),
        }
        if session["render_templates"]:
            try:
                system_text = render_system(session["system_template"], scope)
            except ValueError as exc:
                raise ApiError(422, str(exc)) from None
        else:
            system_text = session["system_template"] or session["situation"] or ""
        system = {"role": "system", "content": system_text} if system_text else None
        try:
            context = fit(system, history, new, session["token_budget"], session["context_overflow"])
        except ContextTooLarge as exc:
            raise ApiError(413, str(exc)) from None
        return context, docs

    async def _recall(
        self,
        developer: str,
        session: dict[str, Any],
        agent: dict[str, Any],
        users: list[dict[str, Any]],
        new: list[dict[str, Any]],
    ) -> list[dict[str, Any]]:
        owners = [agent["id"], *(u["id"] for u in users)]
        text = next(
            (
                m["content"]
                for m in reversed(new)
                if m["role"] == "user" and isinstance(m.get("content"), str)
            ),
            "",
        )
        if not text or not await self.store.pool.fetchval(
            "SELECT EXISTS (SELECT 1 FROM docs WHERE developer_id = $1 AND owner_id = ANY($2::uuid[]))",
            developer,
            owners,
        ):
            return []
        options = {**DEFAULT_RECALL, **(session["recall_options"] or {})}
        query = SearchQuery(
            text=text if options["mode"] != "vector" else None,
            limit=int(options.get("limit", 3)),
            metadata_filter=options.get("metadata_filter") or {},
            confidence=float(options.get("confidence", 0.0)),
            alpha=float(options.get("alpha", 0.5)),
            mmr_strength=float(options.get("mmr_strength", 0.0)),
        )
        if options["mode"] != "text":
            (query.vector,) = await self.embedder.embed([text])
        return await self.docs.search(developer, owners, query)

    async def history(self, developer: str, session_id: str) -> tuple[str | None, list[dict[str, Any]]]:
        """The session's summary and the messages not yet folded into it, read in one snapshot (a
        compression landing in between must not lose the messages it folds)."""
        async with (
            self.store.pool.acquire() as conn,
            conn.transaction(isolation="repeatable_read", readonly=True),
        ):
            summary = await conn.fetchval(
                "SELECT summary FROM sessions WHERE developer_id = $1 AND id = $2", developer, session_id
            )
            rows = await conn.fetch(
                "SELECT role, name, content, tool_calls, tool_call_id, token_count FROM entries "
                "WHERE developer_id = $1 AND session_id = $2 AND NOT summarized ORDER BY seq",
                developer,
                session_id,
            )
        messages = []
        for r in rows:
            message: dict[str, Any] = {
                "role": r["role"],
                "content": r["content"],
                "_tokens": r["token_count"],
            }
            for key in ("name", "tool_calls", "tool_call_id"):
                if r[key] is not None:
                    message[key] = r[key]
            messages.append(message)
        return summary, messages

    async def chat(
        self,
        developer: str,
        session: dict[str, Any],
        body: schemas.Chat,
        on_text: Callable[[int, str], Awaitable[None]] | None = None,
    ) -> dict[str, Any]:
        """Each agent of the session answers in turn (or just the one named), each seeing the answers before.
        With `on_text`, models stream, and each piece of text goes to `on_text(choice index, text)`."""
        agent_ids = [body.agent] if body.agent else session["agents"]
        if body.agent and body.agent not in session["agents"]:
            raise ApiError(422, f"agent {body.agent} is not part of session {session['id']}")
        async with self._turn(developer, session["id"]):
            choices: list[dict[str, Any]] = []
            usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
            recalled: list[dict[str, Any]] = []
            answered: list[dict[str, Any]] = []
            for agent_id in agent_ids:
                agent = await _row(self.store, AGENTS, developer, agent_id)
                if agent is None:
                    raise not_found("agent", agent_id)
                turn = body.model_copy(
                    update={"messages": [*body.messages, *map(schemas.ChatMessage.model_validate, answered)]}
                )
                cast = await self.cast(developer, session, agent, body)
                context, docs = await self.prepare(developer, session, turn, cast)
                messages = context.messages
                await self._maybe_compress(developer, session, context)
                recalled += [d for d in docs if d["id"] not in {r["id"] for r in recalled}]
                specs, fixed = cast.specs, cast.fixed
                tools = [prompts.offered_tool(spec, fixed[name]) for name, spec in specs.items()]
                auto_run = session["auto_run_tools"] if body.auto_run_tools is None else body.auto_run_tools
                for turn_number in range(prompts.MAX_TURNS + 1):
                    streamed = functools.partial(on_text, len(choices)) if on_text else None
                    answer = await self._complete(body, agent, messages, session["id"], tools, streamed)
                    for key in usage:
                        usage[key] += int((answer["usage"] or {}).get(key) or 0)
                    message = answer["response"]["choices"][0]["message"]
                    calls = message.get("tool_calls") or []
                    for call in calls:  # fixed values go in, whoever runs the call
                        call["function"]["arguments"] = json.dumps(
                            {**prompts.call_arguments(call), **fixed.get(call["function"]["name"], {})}
                        )
                    server_side = [
                        specs.get(c["function"]["name"], {}).get("type") not in (None, "function")
                        for c in calls
                    ]
                    if not (auto_run and calls and all(server_side)):
                        break  # an answer, or calls only the client can run
                    if turn_number == prompts.MAX_TURNS:
                        raise ApiError(
                            422,
                            f"MaxTurnsExceeded: the model still asked for tools after {prompts.MAX_TURNS} turns",
                        )
                    results = await asyncio.gather(
                        *(
                            self._run_tool(developer, agent["id"], specs[c["function"]["name"]], c)
                            for c in calls
                        )
                    )
                    exchange = [
                        {"role": "assistant", "content": message.get("content"), "tool_calls": calls},
                        *(
                            {"role": "tool", "tool_call_id": c["id"], "content": json.dumps(r)}
                            for c, r in zip(calls, results, strict=True)
                        ),
                    ]
                    answered += exchange
                    messages = [*messages, *exchange]
                answered.append(
                    {k: v for k, v in message.items() if k in ("role", "content", "tool_calls") and v}
                )
                if len(agent_ids) > 1:
                    answered[-1]["name"] = agent.get("name")
                choices.append({**answer["response"]["choices"][0], "index": len(choices)})
            if body.save:
                await self._save(
                    developer,
                    session["id"],
                    [m.model_dump(exclude_none=True) for m in body.messages],
                    answered,
                )
        return {
            "id": str(uuid.uuid4()),
            "created_at": datetime.now(UTC),
            "choices": choices,
            "usage": usage,
            "docs": recalled,
            "jobs": [],
        }

    @contextlib.asynccontextmanager
    async def _turn(self, developer: str, session_id: str) -> AsyncIterator[None]:
        """A chat slot of the developer's, then the session's turn (one chat at a time per session, so
        history never interleaves half-turns)."""
        with self.slots.slot(developer):
            try:
                async with self.turns.turn(developer, session_id, CHAT_TURN_WAIT_SECONDS):
                    yield
            except SessionBusy:
                raise ApiError(409, f"session {session_id} is busy with another chat; try again") from None

    async def _run_tool(
        self, developer: str, agent_id: str, spec: dict[str, Any], call: dict[str, Any]
    ) -> dict[str, Any]:
        """One server-side tool call, on the worker (workflows/tools.py); a failure is a result the model
        reads, like in a task's tool loop."""
        started = time.monotonic()
        try:
            data = await self.temporal.execute_workflow(
                RUN_TOOL_WORKFLOW,
                RunToolRequest(
                    owner=Owner(developer_id=developer, agent_id=agent_id),
                    tool=spec,
                    arguments=prompts.call_arguments(call),
                    max_tool_timeout=self.max_tool_timeout,
                ),
                id=f"chat-tool-{uuid.uuid4()}",
                task_queue=self.task_queue,
            )
        except WorkflowFailureError as exc:
            cause = exc.cause.cause if isinstance(exc.cause, ActivityError) else exc.cause
            code = cause.type if isinstance(cause, ApplicationError) and cause.type else "tool_failed"
            message = cause.message if isinstance(cause, ApplicationError) else str(cause)
            return prompts.tool_result(
                "error", started, time.monotonic(), error={"code": code, "message": message}
            )
        return prompts.tool_result("success", started, time.monotonic(), data)

    async def _complete(
        self,
        body: schemas.Chat,
        agent: dict[str, Any],
        messages: list[dict[str, Any]],
        session_id: str,
        tools: list[dict[str, Any]],
        on_text: OnText | None = None,
    ) -> dict[str, Any]:
        settings = {**(agent.get("default_settings") or {})}
        for key in (
            "temperature",
            "max_tokens",
            "top_p",
            "stop",
            "seed",
            "frequency_penalty",
            "presence_penalty",
        ):
            if getattr(body, key) is not None:
                settings[key] = getattr(body, key)
        request = {
            "model": body.model or settings.pop("model", None) or agent.get("model"),
            "messages": messages,
            "settings": settings,
            "response_format": body.response_format,
            "tools": tools,
            "at": f"session:{session_id}",
            "owner": {"developer_id": agent["developer_id"], "agent_id": agent["id"]},
        }
        try:
            return await self.models.complete(request, on_text)
        except ApplicationError as exc:
            status = 502 if exc.type in ("ModelUnavailable", "InvalidModelOutput") else 400
            raise ApiError(status, exc.message) from None

    async def _save(
        self, developer: str, session_id: str, asked: list[dict[str, Any]], answered: list[dict[str, Any]]
    ) -> None:
        # The request was checked on its way in (api/request_check.py); the answers come from a model or a
        # tool, and text Postgres cannot store there is their fault, not the caller's.
        for problem in find_unstorable(answered, limit=None, most=1):
            raise ApiError(
                502,
                f"the answer cannot be saved to the history: at {format_path(problem.loc)} it {problem.message}",
            )
        rows = [(m, "api_request") for m in asked] + [(m, "api_response") for m in answered]
        await self.store.pool.executemany(
            "INSERT INTO entries (id, session_id, developer_id, role, name, content, tool_calls, tool_call_id, "
            "token_count, source) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            [
                (
                    uuid.uuid4(),
                    session_id,
                    developer,
                    m["role"],
                    m.get("name"),
                    m.get("content"),
                    m.get("tool_calls"),
                    m.get("tool_call_id"),
                    count_tokens(m),
                    source,
                )
                for m, source in rows
            ],
        )
