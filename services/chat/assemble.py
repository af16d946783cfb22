"""What one agent's turn sends the model: the system message from the session's template, the history, the
new messages, fitted to the token budget; and the docs recalled for it."""

from __future__ import annotations

from collections.abc import Mapping

from contracts.json import JsonObject, JsonValue
from contracts.messages import Message
from contracts.records.docs import SearchHit
from infra.models.embeddings import Embedders
from infra.store.docs import DocStore, SearchQuery
from infra.store.session_history import SessionHistory
from services.chat.cast import Cast
from services.chat.context import (
    Context,
    ContextTooLarge,
    Entry,
    NeedsCompression,
    fit,
    metadata_layers,
    render_system,
    token_budget,
)
from services.chat.request import Chat
from services.chat.session import ChatSession, template_view
from services.errors import Invalid, TooLarge

# Julep's recall options, as its session model defaults them (a session whose recall_options is null recalls
# nothing): a vector search, with the query the last few user and assistant messages.
DEFAULT_RECALL: JsonObject = {
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
        self, developer: str, session: ChatSession, body: Chat, cast: Cast
    ) -> tuple[Context, list[JsonObject]]:
        """The context to send (its messages, and how many history messages it left out) and the docs
        recalled (as the doc store finds them). An `adaptive` session's context over budget is
        NeedsCompression, for the caller to act on."""
        new = [m.message() for m in body.messages]
        summary, entries = await self.history.unsummarized(developer, session.id)
        history = [Entry.of(entry) for entry in entries]
        said = [*(e.message for e in history), *new]
        hits, embedded = await self._recall(developer, session, cast, said) if body.recall else ([], False)
        if not body.recall_tools:  # Julep's recall_tools: false sends the history without its tool exchanges
            history = [
                Entry(without_tool_calls(e.message), e.tokens)
                for e in history
                if not is_tool_exchange(e.message)
            ]
        system_text = self._system_text(session, cast, summary, hits)
        system = Message(role="system", content=system_text) if system_text else None
        agent = cast.agent
        setting = agent.setting("model")
        model = body.model or (setting if isinstance(setting, str) else None) or agent.model
        budget = token_budget(session, model or self.default_model)
        try:
            context = fit(system, history, new, budget, session.context_overflow)
        except NeedsCompression:
            raise
        except ContextTooLarge as exc:
            raise TooLarge(str(exc)) from None
        return context, [hit.json(embedded) for hit in hits]

    def _system_text(
        self, session: ChatSession, cast: Cast, summary: str | None, hits: list[SearchHit]
    ) -> str:
        """The session's system template rendered over who takes part (or, with render_templates off, the
        template or situation as written)."""
        if not session.render_templates:
            return session.system_template or session.situation or ""
        agent, users, tools = cast.stored, cast.users, cast.agent_tools
        scope: Mapping[str, object] = {
            "agent": template_view(agent),
            "user": template_view(users[0]) if users else None,
            "users": [template_view(u) for u in users],
            "session": session.view,
            "situation": session.situation,
            "summary": summary,
            "tools": [{"name": t.name, "type": t.type, "description": t.description} for t in tools],
            "docs": [{"title": hit.title, "content": hit.snippet.content} for hit in hits],
            "metadata": metadata_layers(agent.metadata, *(u.metadata for u in users), session.metadata),
        }
        try:
            return render_system(session.system_template, scope)
        except ValueError as exc:
            raise Invalid(str(exc)) from None

    async def _recall(
        self, developer: str, session: ChatSession, cast: Cast, messages: list[Message]
    ) -> tuple[list[SearchHit], bool]:
        """The docs of the agent and the session's users that match the conversation's last messages, as
        Julep recalls them: only in a session with recall_options, searching by its last
        `num_search_messages` user and assistant messages (the text search by the last of them). None, and
        no embedding, when the owners have no docs. With them, whether the answer shows their embeddings."""
        if session.recall_options is None:
            return [], False
        options = {**DEFAULT_RECALL, **session.recall_options}
        longest = _int(options["max_query_length"])
        searched = [
            (m.get("name") or m["role"], content)
            for m in messages[-_int(options["num_search_messages"]) :]
            if m["role"] in ("user", "assistant") and isinstance(content := m.get("content"), str)
        ]
        owners = [cast.stored.id, *(u.id for u in cast.users)]
        if not searched or not await self.docs.any_owned_by(developer, owners):
            return [], False
        metadata_filter = options.get("metadata_filter")
        query = SearchQuery(
            text=searched[-1][1].strip()[:longest] if options["mode"] != "vector" else None,
            limit=_int(options["limit"]),
            metadata_filter=metadata_filter if isinstance(metadata_filter, dict) else {},
            confidence=_float(options["confidence"]),
            alpha=_float(options["alpha"]),
            mmr_strength=_float(options["mmr_strength"]),
        )
        if options["mode"] != "text":
            said = "\n\n".join(f"{who}: {content}" for who, content in searched).strip()
            embedder = await self.embedders.of(developer)
            (query.vector,) = await embedder.embed([said[-longest:]], RECALL_INSTRUCTION)
        return await self.docs.search(developer, owners, query), query.include_embeddings


def is_tool_exchange(message: Message) -> bool:
    """A tool's result, or an assistant's message that only called tools."""
    return message["role"] == "tool" or bool(message.get("tool_calls") and not message.get("content"))


def without_tool_calls(message: Message) -> Message:
    """A history message without the tool calls it made (an assistant's: its text is kept)."""
    if not message.get("tool_calls"):
        return message
    kept = Message(**message)
    del kept["tool_calls"]
    return kept


def _int(value: JsonValue) -> int:
    return int(value) if isinstance(value, int | float | str) else 0


def _float(value: JsonValue) -> float:
    return float(value) if isinstance(value, int | float | str) else 0.0
