"""What one agent's turn sends the model: the system message from the session's template, the history, the
new messages, fitted to the token budget; and the docs recalled for it."""

from __future__ import annotations

from typing import Any

from infra.models.embeddings import Embedders
from infra.store.docs import DocStore, SearchQuery
from infra.store.session_history import SessionHistory
from services.chat.cast import Cast
from services.chat.context import (
    Context,
    ContextTooLarge,
    NeedsCompression,
    fit,
    metadata_layers,
    render_system,
    token_budget,
)
from services.chat.request import Chat
from services.errors import Invalid, TooLarge

# Julep's recall options, as its session model defaults them (a session whose recall_options is null recalls
# nothing): a vector search, with the query the last few user and assistant messages.
DEFAULT_RECALL: dict[str, Any] = {
    "mode": "vector",
    "limit": 10,
    "confidence": 0.5,
    "alpha": 0.5,
    "mmr_strength": 0.5,
    "num_search_messages": 4,
    "max_query_length": 1000,
}
RECALL_INSTRUCTION = "Represent the query for retrieving supporting documents: "


class ContextAssembler:
    def __init__(
        self, history: SessionHistory, docs: DocStore, embedders: Embedders, default_model: str | None = None
    ):
        self.history = history
        self.default_model = default_model  # the model a chat uses when neither request nor agent names one
        self.docs = docs
        self.embedders = embedders

    async def assemble(
        self, developer: str, session: dict[str, Any], body: Chat, cast: Cast
    ) -> tuple[Context, list[dict[str, Any]]]:
        """The context to send (its messages, and how many history messages it left out) and the docs
        recalled. An `adaptive` session's context over budget is NeedsCompression, for the caller to act on."""
        new = [m.model_dump(exclude_none=True) for m in body.messages]
        summary, history = await self.history.unsummarized(developer, session["id"])
        docs = await self._recall(developer, session, cast, [*history, *new]) if body.recall else []
        if not body.recall_tools:  # Julep's recall_tools: false sends the history without its tool exchanges
            history = [without_tool_calls(m) for m in history if not is_tool_exchange(m)]
        system_text = self._system_text(session, cast, summary, docs)
        system = {"role": "system", "content": system_text} if system_text else None
        agent = cast.agent
        model = body.model or (agent.get("default_settings") or {}).get("model") or agent.get("model")
        budget = token_budget(session, model or self.default_model)
        try:
            context = fit(system, history, new, budget, session["context_overflow"])
        except NeedsCompression:
            raise
        except ContextTooLarge as exc:
            raise TooLarge(str(exc)) from None
        return context, docs

    def _system_text(
        self, session: dict[str, Any], cast: Cast, summary: str | None, docs: list[dict[str, Any]]
    ) -> str:
        """The session's system template rendered over who takes part (or, with render_templates off, the
        template or situation as written)."""
        if not session["render_templates"]:
            return session["system_template"] or session["situation"] or ""
        agent, users, tools = cast.agent, cast.users, cast.agent_tools
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
        try:
            return render_system(session["system_template"], scope)
        except ValueError as exc:
            raise Invalid(str(exc)) from None

    async def _recall(
        self, developer: str, session: dict[str, Any], cast: Cast, messages: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """The docs of the agent and the session's users that match the conversation's last messages, as
        Julep recalls them: only in a session with recall_options, searching by its last
        `num_search_messages` user and assistant messages (the text search by the last of them). None, and
        no embedding, when the owners have no docs."""
        if session["recall_options"] is None:
            return []
        options = {**DEFAULT_RECALL, **session["recall_options"]}
        longest = int(options["max_query_length"])
        searched = [
            m
            for m in messages[-int(options["num_search_messages"]) :]
            if m["role"] in ("user", "assistant") and isinstance(m.get("content"), str)
        ]
        owners = [cast.agent["id"], *(u["id"] for u in cast.users)]
        if not searched or not await self.docs.any_owned_by(developer, owners):
            return []
        query = SearchQuery(
            text=searched[-1]["content"].strip()[:longest] if options["mode"] != "vector" else None,
            limit=int(options["limit"]),
            metadata_filter=options.get("metadata_filter") or {},
            confidence=float(options["confidence"]),
            alpha=float(options["alpha"]),
            mmr_strength=float(options["mmr_strength"]),
        )
        if options["mode"] != "text":
            said = "\n\n".join(f"{m.get('name') or m['role']}: {m['content']}" for m in searched).strip()
            embedder = await self.embedders.of(developer)
            (query.vector,) = await embedder.embed([said[-longest:]], RECALL_INSTRUCTION)
        return await self.docs.search(developer, owners, query)


def is_tool_exchange(message: dict[str, Any]) -> bool:
    """A tool's result, or an assistant's message that only called tools."""
    return message.get("role") == "tool" or bool(message.get("tool_calls") and not message.get("content"))


def without_tool_calls(message: dict[str, Any]) -> dict[str, Any]:
    """A history message without the tool calls it made (an assistant's: its text is kept)."""
    return {k: v for k, v in message.items() if k != "tool_calls"} if message.get("tool_calls") else message
