"""Where resume inputs wait for the `wait_for_input` step (or function tool call) they answer.

The workflow's `resume` signal delivers into an Inbox and Interpreter.wait takes from it; each input is
addressed to an open wait by the seq of that wait's `wait` transition.

A resume can come for a wait this run of the workflow has not reached yet: a worker wrote the `wait`
transition (a local activity: the API then sees `awaiting_input`) and died before its workflow task
completed, so the next worker replays from before the wait and gets the signal first. The wait is in
Postgres, so the workflow, being deterministic, reaches it again at the same seq: such a resume is kept
(`early`) and answers that wait when it opens.
"""

from __future__ import annotations

from typing import Any

from contracts.json import JsonObject
from workflows.input_schema import input_problems


class Inbox:
    """Resume inputs, each addressed to an open wait by the seq of that wait's `wait` transition."""

    def __init__(self) -> None:
        self.open: set[int] = set()
        self.answers: dict[int, Any] = {}
        self.answered_at: dict[int, int] = {}  # wait seq -> the newest wait seq open when it was answered
        self.early: dict[int, Any] = {}  # resumes for waits not reached yet in this run (see above)
        self.schemas: dict[int, JsonObject] = {}  # what the input of each open wait that has one must satisfy
        self.newest = 0

    def opened(self, wait_seq: int, schema: JsonObject | None = None) -> None:
        self.open.add(wait_seq)
        self.newest = max(self.newest, wait_seq)
        if schema is not None:
            self.schemas[wait_seq] = schema

    def deliver(self, wait_seq: Any, value: Any, exact: bool = False) -> bool:
        """Give `value` to wait `wait_seq` if it is open and unanswered.

        A resume for a wait that was just answered goes to the oldest other wait that was already open
        then (map items waiting side by side, which a client cannot tell apart), unless it is `exact` (the
        client named the wait by its id); one for a question that came later, or for nothing, is dropped,
        so a duplicate click never answers a new question, and so is one its wait's schema refuses. One for
        a wait past every wait opened so far is kept in `early` for `take_early`."""
        if isinstance(wait_seq, int) and wait_seq > self.newest:
            self.early.setdefault(wait_seq, value)
            return True
        unanswered = sorted(self.open - self.answers.keys())
        if wait_seq not in unanswered:
            overlapping = [seq for seq in unanswered if seq <= self.answered_at.get(wait_seq, 0)]
            if exact or not overlapping:
                return False
            wait_seq = overlapping[0]
        if not self._fits(wait_seq, value):
            return False
        self.answers[wait_seq] = value
        self.answered_at[wait_seq] = self.newest
        return True

    def take_early(self, wait_seq: int) -> None:
        """Answer wait `wait_seq`, just opened, with the resume that came before it (the first one: a
        duplicate of an early resume is dropped, as a duplicate of any resume may be)."""
        value = self.early.pop(wait_seq)
        if self._fits(wait_seq, value):
            self.answers[wait_seq] = value
            self.answered_at[wait_seq] = self.newest

    def closed(self, wait_seq: int) -> None:
        self.open.discard(wait_seq)
        self.schemas.pop(wait_seq, None)

    def _fits(self, wait_seq: int, value: Any) -> bool:
        schema = self.schemas.get(wait_seq)
        return schema is None or not input_problems(schema, value)
