"""A doc's passages: what is embedded and searched, each alone."""

from __future__ import annotations

CHUNK_WORDS = 120  # all-MiniLM-L6-v2 reads 256 word pieces; 120 words stay inside that
CHUNK_OVERLAP = 20


def chunk(content: str | list[str]) -> list[str]:
    """Split a doc into passages: each given string on its own, long ones into overlapping word windows."""
    passages = [content] if isinstance(content, str) else list(content)
    chunks: list[str] = []
    for passage in passages:
        words = passage.split()
        if len(words) <= CHUNK_WORDS:
            if passage.strip():
                chunks.append(passage.strip())
            continue
        step = CHUNK_WORDS - CHUNK_OVERLAP
        for start in range(0, len(words) - CHUNK_OVERLAP, step):
            chunks.append(" ".join(words[start : start + CHUNK_WORDS]))
    return chunks or [""]
