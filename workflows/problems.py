"""A problem with user input, and where it is; the closest valid name for an unknown one; the order answers
list problems in."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    path: str
    message: str


# Warnings an answer lists at most: a document with thousands of ignored keys gets the first ones and a count,
# not an answer many times the size of what it sent.
MAX_WARNINGS = 100
# Longer words are not typos of a key or a name: no suggestion is looked for (difflib's cost grows with both).
MAX_SUGGESTED_WORD = 64
# Unknown keys and names of one document looked up for the closest valid one (see Suggestions).
MAX_SUGGESTIONS = 200


def capped_warnings(warnings: list[Problem]) -> list[Problem]:
    """The first MAX_WARNINGS warnings, then one that counts the rest."""
    if len(warnings) <= MAX_WARNINGS:
        return warnings
    rest = len(warnings) - MAX_WARNINGS
    return [*warnings[:MAX_WARNINGS], Problem("", f"and {rest} more warnings like these, not listed")]


def closest(word: str, candidates: Iterable[str], ignore_case: bool = True) -> str | None:
    """The candidate `word` is most likely a typo of, if one is close enough (difflib's ratio >= 0.6), case
    aside unless told (`Evaluate` is a typo of `evaluate`; Python's names keep their case)."""
    if not isinstance(word, str) or not word or len(word) > MAX_SUGGESTED_WORD:
        return None
    fold = str.lower if ignore_case else str
    by_folded = {fold(c): c for c in sorted(candidates, reverse=True) if c != word}
    found = difflib.get_close_matches(fold(word), by_folded, n=1)
    return by_folded[found[0]] if found else None


def did_you_mean(word: str, candidates: Iterable[str], ignore_case: bool = True) -> str:
    """`: did you mean `x`?` for the closest candidate, or "" when none is close."""
    match = closest(word, candidates, ignore_case)
    return f": did you mean `{match}`?" if match else ""


class Suggestions:
    """`closest` and `did_you_mean` for the first `limit` unknown keys and names of one document. Each look
    costs a comparison with every candidate: a document of many thousand unknown keys (a crowd's, or an
    attacker's) must not cost seconds. Past the limit nothing is close: an unknown key is ignored with a
    warning, an unknown name is named without a suggestion."""

    def __init__(self, limit: int = MAX_SUGGESTIONS):
        self.left = limit

    def closest(self, word: str, candidates: Iterable[str], ignore_case: bool = True) -> str | None:
        if self.left <= 0:
            return None
        self.left -= 1
        return closest(word, candidates, ignore_case)

    def __call__(self, word: str, candidates: Iterable[str], ignore_case: bool = True) -> str:
        match = self.closest(word, candidates, ignore_case)
        return f": did you mean `{match}`?" if match else ""


def _path_key(path: str) -> list[str | int]:
    # Indexes compare as numbers (main[2] before main[10]); re.split with a group alternates text and digits,
    # so text is only ever compared with text.
    return [int(part) if i % 2 else part for i, part in enumerate(re.split(r"(\d+)", path))]


def in_path_order(problems: Iterable[Problem]) -> list[Problem]:
    """Problems sorted by path, indexes by number; problems at one path keep their order."""
    return sorted(problems, key=lambda p: _path_key(p.path))
