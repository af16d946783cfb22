"""References to secrets, so that workflows can build requests that use secrets without ever holding them.

A tool spec says `secrets.NAME` (`$ "Bearer " + secrets.NAME`, or `{{ secrets.NAME }}` in a template). While
the workflow renders the spec, `secrets.NAME` becomes a reference: a marker holding the name and a nonce
fresh for each call. The activity that makes the call swaps references for values just before it sends, and
takes them out of anything it returns (activities/secrets.py). So values never enter Temporal history,
transitions or logs, and text that merely looks like a reference (from a user's input, say) does not match
the nonce and stays text.
"""

from __future__ import annotations

import re
from typing import Any

MARK = "\u2063"  # INVISIBLE SEPARATOR: never typed by accident, survives JSON and templates
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


def reference(nonce: str, name: str) -> str:
    return f"{MARK}secret:{nonce}:{name}{MARK}"


def pattern(nonce: str) -> re.Pattern[str]:
    return re.compile(f"{MARK}secret:{re.escape(nonce)}:([A-Za-z_][A-Za-z0-9_]{{0,127}}){MARK}")


class SecretRefs(dict[str, str]):
    """`secrets` as expressions and templates see it: every identifier is a key, valued by its reference."""

    def __init__(self, nonce: str):
        super().__init__()
        self.nonce = nonce
        self.lookups = 0  # to tell when a reference did not arrive intact (see `intact`)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and bool(NAME.match(name))

    def __missing__(self, name: str) -> str:
        if not NAME.match(name):
            raise KeyError(name)
        self.lookups += 1
        return reference(self.nonce, name)

    def intact(self, value: Any) -> bool:
        """False when `value` holds fewer whole references than were looked up: one was transformed on its
        way (`secrets.KEY | upper`, `secrets.KEY[1:]`), which cannot work, as the workflow never holds the
        value itself."""
        refs, count = pattern(self.nonce), 0

        def tally(text: str) -> str:
            nonlocal count
            count += len(refs.findall(text))
            return text

        _walk(value, tally)
        return count >= self.lookups


def names_in(value: Any, nonce: str) -> set[str]:
    """The secret names `value` refers to with this nonce."""
    refs, found = pattern(nonce), set()

    def collect(text: str) -> str:
        found.update(refs.findall(text))
        return text

    _walk(value, collect)
    return found


def substitute(value: Any, nonce: str, secrets: dict[str, str]) -> Any:
    """`value` with each reference replaced by its secret (every name must be in `secrets`)."""
    refs = pattern(nonce)
    return _walk(value, lambda text: refs.sub(lambda m: secrets[m.group(1)], text))


def _walk(value: Any, on_text: Any) -> Any:
    if isinstance(value, str):
        return on_text(value) if MARK in value else value
    if isinstance(value, dict):
        return {_walk(k, on_text): _walk(v, on_text) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, on_text) for v in value]
    return value
