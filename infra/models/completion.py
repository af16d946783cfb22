"""A provider's answer read as a Completion (contracts/messages.py): the JSON the OpenAI SDK gives, or a
recording holds, checked for the parts Mint reads before it is used as one."""

from __future__ import annotations

from typing import TypeGuard

from contracts.messages import Completion
from infra.temporal import errors


def is_completion(value: object) -> TypeGuard[Completion]:
    """Whether `value` is a chat completion: choices, each with an assistant message whose content is text,
    parts or nothing and whose tool calls (if any) are a list, and usage (if any) an object."""
    if not isinstance(value, dict) or not isinstance(value.get("choices"), list):
        return False
    if not isinstance(value.get("usage") or {}, dict):
        return False
    return all(_is_choice(choice) for choice in value["choices"])


def _is_choice(choice: object) -> bool:
    if not isinstance(choice, dict) or not isinstance(message := choice.get("message"), dict):
        return False
    return (
        isinstance(message.get("role"), str)
        and isinstance(message.get("content"), str | list | None)
        and isinstance(message.get("tool_calls"), list | None)
    )


def count_of(value: object, key: str) -> int:
    """A count a provider's JSON gives (tokens, a time) under `key`; 0 where it gives none that is one."""
    found = value.get(key) if isinstance(value, dict) else None
    return found if isinstance(found, int) and not isinstance(found, bool) else 0


def stream_cut_off() -> Exception:
    """A stream that ended before its answer did (every provider's stream ends by saying it is done)."""
    return errors.transient("the model's stream ended before its answer did", "ModelUnavailable")
