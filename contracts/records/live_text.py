"""The live text of a prompt step that streams, as the store answers it (infra/store/step_streams.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LiveText:
    """One model call's text so far: `key` names the call (the same across its attempts), `step` its step's
    label (else its place, `main[0]`), `run` the attempt writing it (a new one starts its text again), and
    `done` says the call has ended (its answer is the step's now)."""

    key: str
    step: str
    run: str
    text: str
    done: bool
