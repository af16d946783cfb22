"""Julep v1's text helpers for expressions, each charged by the text it reads and builds: `extract_json` (JSON,
from a Markdown code block if there is one) and `chunk_doc` (sentences, in overlapping chunks).
"""

from __future__ import annotations

import json as _json
from typing import Any

import re2

from expressions.budget import CHARS_PER_UNIT, charge
from expressions.data import check_text

JSON_LOAD_PER_CHAR = 1 / 32  # json's C parser (as load_json)
SQUARE_BITS = 1 << 18
_LONG_NUMBER = re2.compile(r"\d{100,}")


def parse_json(text: str, strict: bool = True) -> Any:
    """json.loads, charged by the text and by its long numbers (a big integer parses in quadratic time)."""
    charge(int(len(check_text(text)) * JSON_LOAD_PER_CHAR))
    for digits in _LONG_NUMBER.findall(text):
        charge((4 * len(digits)) ** 2 // SQUARE_BITS)
    return _json.loads(text, strict=strict)


def extract_json(text: str) -> Any:
    """Julep's extract_json: the JSON in the first ```json (or ```) block of `text`, else all of `text`;
    control characters inside strings are accepted (strict=False)."""
    if not isinstance(text, str):
        raise TypeError(f"extract_json reads text, not {type(text).__name__}")
    charge(len(check_text(text)) // CHARS_PER_UNIT)  # the searches for the markers
    extracted = text
    if "```" in text:
        marker = "```json" if "```json" in text else "```"
        start = text.find(marker) + len(marker)
        end = text.find("```", start)
        if end == -1:
            raise ValueError("Code block has invalid or missing markers")
        extracted = text[start:end].strip()
    try:
        return parse_json(extracted, strict=False)
    except _json.JSONDecodeError as exc:
        raise ValueError(
            f"Failed to parse JSON: {exc}. The extracted text was: {extracted[:100]}..."
        ) from None


# chunk_doc: Julep split the text into sentences with spaCy and grouped them 15 to a chunk, each chunk
# starting 12 sentences after the one before (3 shared), the sentences of a chunk joined by spaces.
CHUNK_SENTENCES = 15
CHUNK_OVERLAP = 3
# A sentence ends at . ! ? or … (with any closing quotes and brackets) followed by white space, or at a
# blank line. RE2: linear in the text, whatever it holds.
_SENTENCE_END = re2.compile(r"[.!?\x{2026}]+[\"'\x{201d}\x{2019})\]]*\s+|\n\s*\n")
SENTENCE_UNITS = 4  # the Python code per sentence found and joined


def sentences(text: str) -> list[str]:
    """The sentences of `text`, stripped of surrounding white space."""
    found, start = [], 0
    for end in _SENTENCE_END.finditer(text):
        charge(SENTENCE_UNITS)
        piece = text[start : end.end()].strip()
        if piece:
            found.append(piece)
        start = end.end()
    if text[start:].strip():
        found.append(text[start:].strip())
    return found


def chunk_doc(text: str) -> list[str]:
    """Julep's chunk_doc: the text's sentences, CHUNK_SENTENCES to a chunk, consecutive chunks sharing
    CHUNK_OVERLAP sentences; the last chunk may be shorter."""
    if not isinstance(text, str):
        raise TypeError(f"chunk_doc reads text, not {type(text).__name__}")
    # A pass of the regex, and the chunks written: at most (15 / 12) of the text, plus spaces.
    charge(3 * len(check_text(text)) // CHARS_PER_UNIT)
    found = sentences(text)
    stride = CHUNK_SENTENCES - CHUNK_OVERLAP
    return [" ".join(found[i : i + CHUNK_SENTENCES]) for i in range(0, len(found), stride)]
