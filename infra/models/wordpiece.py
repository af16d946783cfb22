"""BERT's WordPiece tokenizer as the model's tokenizer.json describes it (the `tokenizers` library's
BertNormalizer, BertPreTokenizer, WordPiece and [CLS] ... [SEP] template), in plain Python: the same token
ids, without the library and the Hugging Face Hub client it brings (about 35 MB installed).

Characters are classed with Python's Unicode tables, newer than the library's: the two differ only on the
few hundred characters Unicode added since (rare scripts' marks and punctuation, such as U+061D), which the
vocabulary has no piece for either way. On the paragraphs of this repository's Markdown and Python files
they give the same ids.
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import lru_cache

SUBWORD_PREFIX = "##"


class WordPiece:
    """Token ids of texts: lowercased, accents stripped, split on whitespace and punctuation, each word cut
    into the longest pieces the vocabulary has (the whole word [UNK] when it cannot be cut)."""

    def __init__(self, tokenizer_json: str, max_tokens: int) -> None:
        spec = json.loads(tokenizer_json)
        self._vocab: dict[str, int] = spec["model"]["vocab"]
        self._unk = self._vocab[spec["model"]["unk_token"]]
        self._longest_word = int(spec["model"]["max_input_chars_per_word"])
        self._first, self._last = self._vocab["[CLS]"], self._vocab["[SEP]"]
        self._max_pieces = max_tokens - 2  # [CLS] and [SEP] count in the model's length
        # Special tokens written in a text are those tokens, as the library reads them, not words.
        specials = sorted((t["content"] for t in spec["added_tokens"]), key=len, reverse=True)
        self._specials = re.compile("(" + "|".join(map(re.escape, specials)) + ")")
        self._pieces = lru_cache(maxsize=50_000)(self._word_pieces)

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        for number, part in enumerate(self._specials.split(text)):
            if number % 2:  # the split's odd parts are the special tokens it split on
                ids.append(self._vocab[part])
                continue
            for word in _words(_normalize(part)):
                ids += self._pieces(word)
            if len(ids) >= self._max_pieces:
                break
        return [self._first, *ids[: self._max_pieces], self._last]

    def _word_pieces(self, word: str) -> list[int]:
        if len(word) > self._longest_word:
            return [self._unk]
        pieces, start = [], 0
        while start < len(word):
            for end in range(len(word), start, -1):
                piece = word[start:end] if start == 0 else SUBWORD_PREFIX + word[start:end]
                if piece in self._vocab:
                    pieces.append(self._vocab[piece])
                    start = end
                    break
            else:
                return [self._unk]
        return pieces


def _normalize(text: str) -> str:
    """BertNormalizer with clean_text, handle_chinese_chars, lowercase and so strip_accents."""
    kept = [" " if _is_space(c) else c for c in text if not _is_control(c) and c not in "\x00\ufffd"]
    spaced = "".join(f" {c} " if _is_chinese(ord(c)) else c for c in kept)
    stripped = "".join(c for c in unicodedata.normalize("NFD", spaced) if unicodedata.category(c) != "Mn")
    return "".join(c.lower() for c in stripped)  # character by character, as the library (no final sigma)


def _words(text: str) -> list[str]:
    """BertPreTokenizer: split on whitespace, each punctuation character a word of its own."""
    words: list[str] = []
    for chunk in text.split():
        word = ""
        for c in chunk:
            if _is_punctuation(c):
                words += [word, c] if word else [c]
                word = ""
            else:
                word += c
        if word:
            words.append(word)
    return words


def _is_space(c: str) -> bool:
    return c in "\t\n\r" or c.isspace()


def _is_control(c: str) -> bool:
    return c not in "\t\n\r" and unicodedata.category(c) in ("Cc", "Cf", "Co", "Cs")


def _is_punctuation(c: str) -> bool:
    return (c.isascii() and not c.isalnum() and c.isprintable() and c != " ") or unicodedata.category(
        c
    ).startswith("P")


def _is_chinese(code: int) -> bool:
    """The CJK ideograph blocks, as BERT has them."""
    return (
        0x4E00 <= code <= 0x9FFF
        or 0x3400 <= code <= 0x4DBF
        or 0x20000 <= code <= 0x2A6DF
        or 0x2A700 <= code <= 0x2B73F
        or 0x2B740 <= code <= 0x2B81F
        or 0x2B820 <= code <= 0x2CEAF
        or 0xF900 <= code <= 0xFAFF
        or 0x2F800 <= code <= 0x2FA1F
    )
