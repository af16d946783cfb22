"""The history cache (infra/store/history_cache.py): what a chat reads of its session is exact, whatever
committed, was replaced or was deleted between two reads."""

from datetime import UTC, datetime

from contracts.messages import Message
from contracts.records.sessions import HistoryEntry
from infra.store.history_cache import HistoryCache

DEV, SESSION = "dev", "s1"


def _entry(seq: int, order: int | None = None) -> tuple[int, HistoryEntry]:
    message = Message(role="user", content=f"m{seq}")
    at = datetime(2026, 1, 1, tzinfo=UTC)
    return seq, HistoryEntry(f"e{seq}", message, 1, "api_request", [], order or seq, at)


def _ids(entries: list[HistoryEntry] | None) -> list[str]:
    assert entries is not None
    return [e.id for e in entries]


def test_a_second_read_needs_only_the_entries_past_the_last_seq_read():
    cache = HistoryCache()
    assert cache.last_seq(DEV, SESSION) == 0
    assert _ids(cache.merged(DEV, SESSION, [1, 2], [_entry(1), _entry(2)])) == ["e1", "e2"]
    assert cache.last_seq(DEV, SESSION) == 2
    assert _ids(cache.merged(DEV, SESSION, [1, 2, 3], [_entry(3)])) == ["e1", "e2", "e3"]
    assert cache.last_seq(DEV, SESSION) == 3


def test_replaced_entries_leave_and_a_summary_sits_where_the_first_it_replaced_sat():
    cache = HistoryCache()
    cache.merged(DEV, SESSION, [1, 2, 3], [_entry(1), _entry(2), _entry(3)])
    # A compression marked 1 and 2 summarized and wrote entry 4 at order 1.
    assert _ids(cache.merged(DEV, SESSION, [3, 4], [_entry(4, order=1)])) == ["e4", "e3"]


def test_a_cleared_history_reads_as_empty_and_then_as_what_came_after():
    cache = HistoryCache()
    cache.merged(DEV, SESSION, [1, 2], [_entry(1), _entry(2)])
    assert _ids(cache.merged(DEV, SESSION, [], [])) == []
    assert _ids(cache.merged(DEV, SESSION, [5], [_entry(5)])) == ["e5"]


def test_an_entry_that_committed_after_a_later_one_was_read_makes_the_caller_read_it_all():
    cache = HistoryCache()
    cache.merged(DEV, SESSION, [1, 3], [_entry(1), _entry(3)])  # seq 2's insert had not committed yet
    assert cache.merged(DEV, SESSION, [1, 2, 3], []) is None  # 2 is live, but not past 3 and not kept
    assert cache.last_seq(DEV, SESSION) == 0  # so the whole history is read again
    assert _ids(cache.merged(DEV, SESSION, [1, 2, 3], [_entry(1), _entry(2), _entry(3)])) == [
        "e1",
        "e2",
        "e3",
    ]


def test_sessions_are_kept_apart_by_developer_and_dropped_least_recent_first():
    cache = HistoryCache(max_sessions=2, max_entries=3)
    cache.merged(DEV, "a", [1], [_entry(1)])
    cache.merged("other", "a", [2], [_entry(2)])
    assert cache.last_seq(DEV, "a") == 1 and cache.last_seq("other", "a") == 2
    cache.merged(DEV, "b", [3], [_entry(3)])  # a third session: the least recent goes
    assert cache.last_seq(DEV, "a") == 0 and cache.last_seq("other", "a") == 2
    cache.merged(DEV, "c", [4, 5, 6], [_entry(4), _entry(5), _entry(6)])  # over the entries kept
    assert cache.last_seq("other", "a") == 0 and cache.last_seq(DEV, "b") == 0
    assert cache.last_seq(DEV, "c") == 6


def test_two_reads_that_overlap_add_each_entry_once():
    cache = HistoryCache()
    cache.merged(DEV, SESSION, [1], [_entry(1)])
    # Two reads both past seq 1: the first merges 2 and 3, the second brings them again.
    cache.merged(DEV, SESSION, [1, 2, 3], [_entry(2), _entry(3)])
    assert _ids(cache.merged(DEV, SESSION, [1, 2, 3], [_entry(2), _entry(3)])) == ["e1", "e2", "e3"]
