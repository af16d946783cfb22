"""Compressing a session's context (adaptive context overflow, seed 003): rounds of three techniques, each
written to the history as summarizer entries that name the entries they replace
(infra/store/session_history.py).

A round reads the entries not yet replaced, in history order, keeps the newest KEEP_RECENT (from a user
message on, so no tool exchange is split) and:
  1. extracts the key entities of the older ones (and of the previous entities entry) into one `system`
     entry, "Key entities: ...", first in the history, replacing the previous one;
  2. summarises the older ones (earlier summaries among them, so they merge) into one `system` entry,
     "Summary of earlier messages: ...", where the first of them was;
  3. trims each kept user or assistant message over the trim size: the model shortens it (an image in it
     becomes the model's description) and the shortened one takes its place.
Images in messages being summarised go to the model as image parts, so the summary describes them. Rounds
repeat until the history is under the target or a round gains nothing (at most MAX_ROUNDS). Each technique's
write is one transaction, so a retry after a crash carries on from what was written.
"""

from __future__ import annotations

import json

from temporalio import activity

from activities.heartbeat import heartbeating
from contracts.background import Compressed, SessionRef
from contracts.calls import ModelRequest, Owner
from contracts.messages import ContentPart, Message
from contracts.records.agents import Agent
from contracts.records.sessions import HistoryEntry
from contracts.temporal import COMPRESS_SESSION
from infra.models.client import ModelClient
from infra.models.tokens import count_tokens
from infra.store.session_history import SUMMARIZER, SessionHistory
from infra.store.tables import AGENTS, SESSIONS, Store

KEEP_RECENT = 4  # the newest messages stay as they are (trimmed at most)
TRIM_TOKENS = 256  # a kept message longer than this (or than its share of the target) is trimmed
MAX_ROUNDS = 4
ENTITIES = "Key entities: "
SUMMARY = "Summary of earlier messages: "
ENTITIES_INSTRUCTIONS = (
    "You extract the key entities of a conversation: the people, places, things, numbers, dates, preferences "
    "and decisions it names, one per line with what is known of each, merged with the previous list. Answer "
    "with the list only."
)
SUMMARY_INSTRUCTIONS = (
    "You summarise conversations. Merge the earlier summaries and the messages below into one summary that "
    "keeps every fact, decision and open question; merge what repeats and drop small talk. Describe what any "
    "image shows. Answer with the summary only."
)
TRIM_INSTRUCTIONS = (
    "You shorten one message of a conversation. Remove padding and repetition, keep every fact and the "
    "writer's voice. Replace any image with a short description of what it shows. Answer with the shortened "
    "message only."
)


class SessionActivities:
    def __init__(self, store: Store, models: ModelClient):
        self.store = store
        self.models = models
        self.history = SessionHistory(store.pool)

    @activity.defn(name=COMPRESS_SESSION)
    async def compress_session(self, request: SessionRef) -> Compressed:
        """Compression rounds until the session's history is under `request.target_tokens` (one round when
        it names none), or a round gains nothing."""
        async with heartbeating():
            developer, session_id = request.developer_id, request.session_id
            session = await self.store.get(SESSIONS, developer, session_id)
            if session is None:
                return Compressed(folded=0)
            agent = await self.store.get(AGENTS, developer, session.agents[0])
            compression = Compression(self.history, self.models, developer, session_id, _model(agent))
            return Compressed(folded=await compression.run(request.target_tokens))


def _model(agent: Agent | None) -> str | None:
    """The model compression asks: the agent's default setting's, else its own."""
    if agent is None:
        return None
    setting = (agent.default_settings or {}).get("model")
    return setting if isinstance(setting, str) and setting else agent.model


def is_entities(entry: HistoryEntry) -> bool:
    return entry.source == SUMMARIZER and str(entry.message.get("content") or "").startswith(ENTITIES)


def is_summary(entry: HistoryEntry) -> bool:
    return entry.source == SUMMARIZER and entry.message["role"] == "system" and not is_entities(entry)


def split(history: list[HistoryEntry]) -> tuple[list[HistoryEntry], list[HistoryEntry]]:
    """(older, kept): the newest KEEP_RECENT (or more) are kept, from a user message on; older is empty when
    there is nothing to summarise but earlier summaries."""
    cut = len(history) - KEEP_RECENT
    starts = [i for i, e in enumerate(history) if e.message["role"] == "user" and i > 0]
    at = max((i for i in starts if i <= cut), default=None) or min(
        (i for i in starts if i > cut), default=None
    )
    if at is None or all(is_summary(m) for m in history[:at]):
        return [], history
    return history[:at], history[at:]


def transcript(header: str, entries: list[HistoryEntry]) -> str | list[ContentPart]:
    """The entries' messages as text for the model, after `header`; with images (OpenAI's image_url parts), a
    list of parts with each image after its message's text."""
    parts: list[ContentPart] = [{"type": "text", "text": header}]
    for entry in entries:
        m = entry.message
        label = (
            "earlier summary"
            if is_summary(entry)
            else m["role"] + (f" ({m['name']})" if m.get("name") else "")
        )
        content = m.get("content")
        images = [p for p in content if p.get("type") == "image_url"] if isinstance(content, list) else []
        if isinstance(content, list):
            content = " ".join(p.get("text", "") for p in content if p.get("type") == "text")
            content += " [image]" * len(images)
        text = f"{label}: {content or ''}"
        if m.get("tool_calls"):
            text += f" (calls {json.dumps(m['tool_calls'])})"
        if parts[-1]["type"] == "text":
            parts[-1] = {"type": "text", "text": parts[-1]["text"] + "\n" + text}
        else:
            parts.append({"type": "text", "text": text})
        parts += images
    return parts[0]["text"] if len(parts) == 1 else parts


def _tokens(entries: list[HistoryEntry]) -> int:
    return sum(e.token_count or count_tokens(e.message) for e in entries)


class Compression:
    """One session's compression: its rounds, each technique a model call and a transaction."""

    def __init__(
        self, history: SessionHistory, models: ModelClient, developer: str, session_id: str, model: str | None
    ):
        self.history, self.models, self.model = history, models, model
        self.developer, self.session_id = developer, session_id

    async def run(self, target: int | None) -> int:
        """Rounds until the history is under `target` (one round for None); how many entries were replaced."""
        replaced = 0
        for _ in range(MAX_ROUNDS):
            history = await self._history()
            if target is not None and _tokens(history) <= target:
                break
            gained = await self.round(history, target)
            after = await self._history()
            if not gained or _tokens(after) >= _tokens(history) or target is None:
                replaced += gained
                break
            replaced += gained
        return replaced

    async def _history(self) -> list[HistoryEntry]:
        _, entries = await self.history.unsummarized(self.developer, self.session_id)
        return entries

    async def round(self, history: list[HistoryEntry], target: int | None) -> int:
        """The three techniques over the history as it is; how many entries they replaced."""
        entities = [m for m in history if is_entities(m)]
        older, kept = split([m for m in history if not is_entities(m)])
        replaced = 0
        if older:
            # Before every other entry (a chat may read the history before the summary lands).
            replaced += await self.extract(history[0].order - 1, entities, older)
            replaced += await self.summarise(older)
        limit = TRIM_TOKENS if target is None else min(TRIM_TOKENS, max(32, target // (KEEP_RECENT + 2)))
        for message in kept:
            replaced += await self.trim(message, limit)
        return replaced

    async def extract(self, first: int, entities: list[HistoryEntry], older: list[HistoryEntry]) -> int:
        """Key entities: one entry, first in the history, replacing the previous one."""
        previous = "\n".join(str(e.message.get("content"))[len(ENTITIES) :] for e in entities) or "(none)"
        header = f"Previous key entities:\n{previous}\n\nMessages:"
        text = await self._ask(ENTITIES_INSTRUCTIONS, transcript(header, older), "session-entities")
        if text is None:
            return 0
        entry: Message = {"role": "system", "content": ENTITIES + text}
        return await self._write([e.id for e in entities], entry, first) and len(entities)

    async def summarise(self, older: list[HistoryEntry]) -> int:
        """Summarise and merge: one entry replacing the older messages (earlier summaries included)."""
        text = await self._ask(SUMMARY_INSTRUCTIONS, transcript("Messages:", older), "session-summary")
        if text is None:
            return 0
        entry: Message = {"role": "system", "content": SUMMARY + text}
        return await self._write([e.id for e in older], entry, older[0].order) and len(older)

    async def trim(self, kept: HistoryEntry, limit: int) -> int:
        """Trim: a user or assistant message over `limit` tokens, shortened in its place."""
        message = kept.message
        if message["role"] not in ("user", "assistant") or message.get("tool_calls"):
            return 0
        if message.get("content") is None or kept.token_count <= limit:
            return 0
        text = await self._ask(TRIM_INSTRUCTIONS, transcript("The message:", [kept]), "session-trim")
        entry: Message = {"role": message["role"], "content": text}
        if "name" in message:
            entry["name"] = message["name"]
        if text is None or count_tokens(entry) >= kept.token_count:
            return 0
        return await self._write([kept.id], entry, kept.order) and 1

    async def _write(self, replaced: list[str], entry: Message, at: int) -> bool:
        return await self.history.replace(
            self.developer, self.session_id, replaced, [(entry, count_tokens(entry), at)]
        )

    async def _ask(self, instructions: str, content: str | list[ContentPart], at: str) -> str | None:
        messages: list[Message] = [
            {"role": "system", "content": instructions},
            {"role": "user", "content": content},
        ]
        # `at` is not the session's id: a recording then replays in any session.
        request = ModelRequest(
            self.model, messages, {"max_tokens": 1024}, [], None, None, at, Owner(self.developer)
        )
        answer = await self.models.complete(request)
        text = answer.response["choices"][0]["message"].get("content")
        return text.strip() if isinstance(text, str) and text.strip() else None
