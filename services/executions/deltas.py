"""The live text of an execution's streamed prompt steps as deltas of its transition stream: the new text of
each model call since the stream last read it, or, for a stream that has just connected, each running
call's text so far as one delta. A call run again (a retry, after a crash) starts its text again, and the
stream sends the new attempt's text from its start."""

from __future__ import annotations

from dataclasses import dataclass

from infra.store.step_streams import StepStreams


@dataclass(frozen=True)
class Delta:
    """New text of a step (its label, else its place), as the model wrote it."""

    step: str
    text: str


class LiveDeltas:
    """What one stream has sent of each call's text: the attempt it read and how much of its text."""

    def __init__(self, streams: StepStreams, developer: str, execution_id: str):
        self.streams = streams
        self.developer = developer
        self.execution_id = execution_id
        self.sent: dict[str, tuple[str, int]] = {}  # call -> (run, characters sent)

    async def so_far(self) -> list[Delta]:
        """On connecting: each running call's text so far; a finished call's answer is in its transition."""
        found = []
        for live in await self.streams.live(self.developer, self.execution_id):
            self.sent[live.key] = (live.run, len(live.text))
            if live.text and not live.done:
                found.append(Delta(live.step, live.text))
        return found

    async def new(self) -> list[Delta]:
        """The text written since the last read: the rest of each call's, or all of an attempt not seen yet."""
        found = []
        for live in await self.streams.live(self.developer, self.execution_id):
            run, sent = self.sent.get(live.key, (live.run, 0))
            if run != live.run:
                sent = 0
            if len(live.text) > sent:
                found.append(Delta(live.step, live.text[sent:]))
            self.sent[live.key] = (live.run, len(live.text))
        return found
