"""What the Temporal UI shows of a running execution, kept current by its workflow: the current details (the
status, what the execution is doing, what its waits ask for) and the MintStatus search attribute.

The details are the workflow's own state, which the UI reads with the SDK's metadata query: setting them
issues no command and adds nothing to the history. They change where the workflow blocks (a call, a wait, a
sleep, child workflows), which is the only time anyone can read them. MintStatus costs a command (an event)
each time it changes, so it changes only with the execution's status (awaiting_input, running again, the
final status), never per step, and only in workflows started with it (services/workflow_labels.py), that is in a
namespace that has it registered: an unregistered one would fail the workflow task.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import islice
from typing import Any

from temporalio import workflow

from contracts.temporal import MINT_STATUS
from contracts.transitions import Position

# Executions that ran before MintStatus was kept current issue no upserts when they replay.
MINT_STATUS_PATCH = "mint-status-search-attribute"
# How much of what a wait asks for the details quote, and how many open waits they list.
MAX_ASK_CHARS = 300
MAX_WAITS_SHOWN = 5


def where(position: Position, label: str | None = None) -> str:
    """`main[2]`, or `main[2] "approve"` for a labelled step."""
    place = f"{position.workflow}[{position.step}]"
    return f'{place} "{label}"' if label else place


def quoted(value: Any, limit: int = MAX_ASK_CHARS) -> str:
    """A value as short JSON text, for a summary or the details."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Visibility:
    """One workflow's details and MintStatus."""

    def __init__(self, execution_id: str, patched: Callable[[str], bool] = workflow.patched) -> None:
        self.execution_id = execution_id
        self.patched = patched  # workflows/patches.py Patches
        # Started with MintStatus: the namespace has it registered, so changing it cannot fail the workflow.
        self.tracks_status = workflow.info().typed_search_attributes.get(MINT_STATUS) is not None
        self.status = "running"
        self.error: str | None = None
        self.active: dict[int, str] = {}  # what is in flight (calls, sleeps, child workflows), oldest first
        self.waits: dict[int, str] = {}  # open waits by the seq of their `wait` transition
        self._tokens = 0

    def status_changed(self, status: str, error: str | None = None) -> None:
        """The execution's status as the transition log writes it (running, awaiting_input, a final one)."""
        if status == self.status:
            return
        self.status, self.error = status, error
        if self.tracks_status and self.patched(MINT_STATUS_PATCH):
            workflow.upsert_search_attributes([MINT_STATUS.value_set(status)])
        self._show()

    @contextmanager
    def doing(self, text: str) -> Iterator[str]:
        """Show `text` (a call, a sleep) while the block runs; yields it, to serve as an activity's summary."""
        self._tokens += 1
        token = self._tokens
        self.active[token] = text
        self._show()
        try:
            yield text
        finally:
            del self.active[token]
            self._show()

    def waiting(self, seq: int, text: str) -> None:
        self.waits[seq] = text
        self._show()

    def answered(self, seq: int) -> None:
        self.waits.pop(seq, None)
        self._show()

    def _show(self) -> None:
        if not workflow.in_workflow():
            # A coroutine closed after its workflow was evicted from the worker's cache: its `finally` blocks
            # run outside the workflow, where there is nothing to show anything on.
            return
        lines = [f"**Status** {self.status}" + (f": {self.error}" if self.error else "")]
        if self.waits:
            lines.append(f"**Waiting for input** ({len(self.waits)})")
            lines += [f"- {text}" for text in islice(self.waits.values(), MAX_WAITS_SHOWN)]
            if len(self.waits) > MAX_WAITS_SHOWN:
                lines.append(f"- and {len(self.waits) - MAX_WAITS_SHOWN} more")
            lines.append(f"Answer with `mint resume {self.execution_id} --input JSON`.")
        if self.active:
            latest = self.active[next(reversed(self.active))]
            more = len(self.active) - 1
            lines.append(f"**Now** {latest}" + (f" (and {more} more in flight)" if more else ""))
        workflow.set_current_details("\n".join(lines))
