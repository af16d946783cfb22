"""The entries of recently chatted sessions, kept in the API process so that a chat reads only what its
session added since its last chat.

A chat sends its session's whole history, and reading and decoding every entry on every chat grew with the
session (most of a chat's CPU at a few hundred entries). An entry never changes once written: it is only
marked summarized (replaced by a summarizer entry) or deleted with its history. So the read names the seq
of every entry that is live now and returns in full only those past the last seq this process has seen;
the cache keeps the live ones it holds and adds the new. A live seq it holds no entry for (an entry that
committed after a later one was read, or a cache that was filled by a read with gaps) makes the caller
read the whole history again."""

from __future__ import annotations

import bisect
from collections import OrderedDict
from dataclasses import dataclass, field

from contracts.records.sessions import HistoryEntry

# Sessions and entries kept (the least recently chatted sessions dropped first; a session's entries are all
# kept or none).
MAX_SESSIONS = 256
MAX_ENTRIES = 50_000


@dataclass
class _Session:
    # The live entries in history order, each under its sort key: a summarizer entry sits at the order of
    # the first entry it replaced, then by seq; every other entry's order is its seq.
    ordered: list[tuple[tuple[int, int], HistoryEntry]] = field(default_factory=list)
    last_seq: int = 0  # the highest seq read (every entry past it is new to the cache)

    def keep(self, live: list[int], read: list[tuple[int, HistoryEntry]]) -> bool:
        """Drop what is no longer live, add what was read and is not kept yet (two reads of the same
        session may overlap); False if a live entry is missing then."""
        alive, kept = set(live), {key[1] for key, _ in self.ordered}
        if not kept <= alive:
            self.ordered = [(key, entry) for key, entry in self.ordered if key[1] in alive]
            kept &= alive
        for seq, entry in read:
            if seq in kept:
                continue
            kept.add(seq)
            key = (entry.order, seq)
            if self.ordered and key < self.ordered[-1][0]:  # a summarizer entry, or a late commit
                bisect.insort(self.ordered, (key, entry), key=lambda item: item[0])
            else:
                self.ordered.append((key, entry))
            self.last_seq = max(self.last_seq, seq)
        return kept == alive


class HistoryCache:
    def __init__(self, max_sessions: int = MAX_SESSIONS, max_entries: int = MAX_ENTRIES):
        self.max_sessions, self.max_entries = max_sessions, max_entries
        self._sessions: OrderedDict[tuple[str, str], _Session] = OrderedDict()

    def last_seq(self, developer: str, session_id: str) -> int:
        """The seq past which a read must return entries in full (0: all of them)."""
        found = self._sessions.get((developer, session_id))
        return found.last_seq if found is not None else 0

    def merged(
        self, developer: str, session_id: str, live: list[int], read: list[tuple[int, HistoryEntry]]
    ) -> list[HistoryEntry] | None:
        """The session's live entries in history order, from those kept and those just `read` (each with
        its seq), where `live` is every live entry's seq; None if an entry is neither (read it all again).
        The entries are the cache's own, shared by every read: a caller never changes one (a copy may)."""
        key = (developer, session_id)
        cached = self._sessions.pop(key, None) or _Session()
        if not cached.keep(live, read):
            return None
        self._sessions[key] = cached
        kept = sum(len(session.ordered) for session in self._sessions.values())
        while self._sessions and (len(self._sessions) > self.max_sessions or kept > self.max_entries):
            kept -= len(self._sessions.popitem(last=False)[1].ordered)
        return [entry for _, entry in cached.ordered]
