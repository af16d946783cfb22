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
from typing import Any

from infra.temporal import errors


def request_digest(request: dict[str, Any]) -> str:
    keyed = {k: request.get(k) for k in ("model", "messages", "tools", "settings", "response_format")}
    return hashlib.sha256(json.dumps(keyed, sort_keys=True).encode()).hexdigest()


class Recordings:
    def __init__(self, path: str | Path, replaying: bool):
        self.path = Path(path)
        self.replaying = replaying
        self._by_digest: dict[str, dict[str, Any]] = {}
        self._by_step: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self._next: dict[str, int] = defaultdict(int)
        if replaying:
            if not self.path.exists():
                raise FileNotFoundError(f"model recordings file {self.path} does not exist")
            for line in self.path.read_text().splitlines():
                if line.strip():
                    entry = json.loads(line)
                    self._by_digest.setdefault(entry["digest"], entry["response"])
                    self._by_step[entry["at"]].append(entry["response"])

    def replay(self, request: dict[str, Any]) -> dict[str, Any]:
        found = self._by_digest.get(request_digest(request))
        if found is not None:
            return found
        at = str(request.get("at"))
        candidates = self._by_step.get(at)
        if not candidates:
            raise errors.permanent(
                f"no recorded model response for step {at} in {self.path.name} (record one with MINT_MODEL_RECORD)",
                "ModelNotConfigured",
            )
        index = self._next[at] % len(candidates)
        self._next[at] += 1
        return candidates[index]

    def record(self, request: dict[str, Any], response: dict[str, Any]) -> None:
        entry = {"at": request.get("at"), "digest": request_digest(request), "response": response}
        with self.path.open("a") as out:
            out.write(json.dumps(entry) + "\n")
