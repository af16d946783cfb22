"""A problem with user input, and where it is."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    path: str
    message: str


# Warnings an answer lists at most: a document with thousands of ignored keys gets the first ones and a count,
# not an answer many times the size of what it sent.
MAX_WARNINGS = 100


def capped_warnings(warnings: list[Problem]) -> list[Problem]:
    """The first MAX_WARNINGS warnings, then one that counts the rest."""
    if len(warnings) <= MAX_WARNINGS:
        return warnings
    rest = len(warnings) - MAX_WARNINGS
    return [*warnings[:MAX_WARNINGS], Problem("", f"and {rest} more warnings like these, not listed")]
