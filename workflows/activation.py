"""What Temporal tells a workflow once per activation (its time, whether it replays, how long its history
is), read once per activation rather than once per step: each read is a lookup of the workflow's runtime,
and together they cost a pure step more than its own work.

The workflow's time stands still while an activation runs and moves with the next one, so a change of
`workflow.time_ns()` marks a new activation. Every value here is deterministic (a replay sees the same), so
the decisions taken from them are too."""

from __future__ import annotations

from datetime import UTC, datetime

from temporalio import workflow


class Activation:
    def __init__(self) -> None:
        self.time_ns: int | None = None
        self.now_text = ""  # the workflow's time as ISO text, as transitions record it
        self.replaying = False
        self.history_length = 0
        self.continue_as_new_suggested = False
        self._unread = True  # a new activation whose values are not read yet

    def tick(self) -> str:
        """The workflow's time as text (a transition's created_at), noting a new activation."""
        now = workflow.time_ns()
        if now != self.time_ns:
            # workflow.now()'s own arithmetic, so that the text is the same
            self.time_ns, self.now_text = now, datetime.fromtimestamp(now / 1e9, UTC).isoformat()
            self._unread = True
        return self.now_text

    def current(self) -> Activation:
        """Brought up to date with the activation running now."""
        self.tick()
        return self.read()

    def read(self) -> Activation:
        """The values of the newest activation seen (by `tick` or `current`): one awaited since is not seen
        yet, which only delays what waits for a long history by a step."""
        if self._unread:
            info = workflow.info()
            self.replaying = workflow.unsafe.is_replaying()
            self.history_length = info.get_current_history_length()
            self.continue_as_new_suggested = info.is_continue_as_new_suggested()
            self._unread = False
        return self


def new_uuid4(rng_bits: int) -> str:
    """The text of the version-4 UUID `workflow.uuid4()` makes from the same 128 random bits, without
    building a UUID object (a transition's id: one per step)."""
    n = (rng_bits & ~(0xC000 << 48)) | (0x8000 << 48)  # the RFC 4122 variant
    n = (n & ~(0xF000 << 64)) | (4 << 76)  # version 4
    h = f"{n:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
