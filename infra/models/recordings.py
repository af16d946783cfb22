"""Recorded model responses: record a live run once, replay it offline (examples, tests, demos).

A recording file holds one JSON object per line: where the call was made (`at`, the step), a digest of the
request, and the response. Replay answers a request with the recording of the same digest, or else with the
next recording made at the same step (so a run whose prompts differ, say by a random topic, still replays),
cycling when they run out. A step with no recording fails with a clear error.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from pathlib import Path

from contracts.calls import ModelRequest
from contracts.messages import Completion
from infra.models.completion import is_completion
from infra.temporal import errors


def request_digest(request: ModelRequest) -> str:
    keyed = {
        "model": request.model,
        "messages": request.messages,
        "tools": request.tools,
        "settings": request.settings,
        "response_format": request.response_format,
    }
    return hashlib.sha256(json.dumps(keyed, sort_keys=True).encode()).hexdigest()


class Recordings:
    def __init__(self, path: str | Path, replaying: bool):
        self.path = Path(path)
        self.replaying = replaying
        self._by_digest: dict[str, Completion] = {}
        self._by_step: dict[str, list[Completion]] = defaultdict(list)
        self._next: dict[str, int] = defaultdict(int)
        if replaying:
            if not self.path.exists():
                raise FileNotFoundError(f"model recordings file {self.path} does not exist")
            for line in self.path.read_text().splitlines():
                if line.strip():
                    entry = json.loads(line)
                    response = entry["response"]
                    if not is_completion(response):
                        raise ValueError(f"a recording in {self.path} holds no chat completion: {line[:200]}")
                    self._by_digest.setdefault(entry["digest"], response)
                    self._by_step[entry["at"]].append(response)

    def replay(self, request: ModelRequest) -> Completion:
        found = self._by_digest.get(request_digest(request))
        if found is not None:
            return found
        at = request.at
        candidates = self._by_step.get(at)
        if not candidates:
            raise errors.permanent(
                f"no recorded model response for step {at} in {self.path.name} (record one with MINT_MODEL_RECORD)",
                "ModelNotConfigured",
            )
        index = self._next[at] % len(candidates)
        self._next[at] += 1
        return candidates[index]

    def record(self, request: ModelRequest, response: Completion) -> None:
        entry = {"at": request.at, "digest": request_digest(request), "response": response}
        with self.path.open("a") as out:
            out.write(json.dumps(entry) + "\n")
