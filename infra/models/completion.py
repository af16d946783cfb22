"""A provider's answer read as a Completion (contracts/messages.py): the JSON the OpenAI SDK gives, or a
recording holds, checked for the parts Mint reads before it is used as one."""

from __future__ import annotations

from typing import TypeGuard

from contracts.messages import Completion
from infra.temporal import errors


def is_completion(value: object) -> TypeGuard[Completion]:
    """Whether `value` is a chat completion: choices, each with an assistant message whose content is text,
    parts (objects naming their type) or nothing and whose tool calls (if any) are objects naming a function,
    and usage (if any) an object."""
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
        and _is_content(message.get("content"))
        and _are_calls(message.get("tool_calls"))
    )


def _is_content(content: object) -> bool:
    """Text, nothing, or parts: each a JSON object naming its type (what a message's content may be)."""
    if content is None or isinstance(content, str):
        return True
    return isinstance(content, list) and all(
        isinstance(p, dict) and isinstance(p.get("type"), str) for p in content
    )


def _are_calls(calls: object) -> bool:
    return calls is None or (
        isinstance(calls, list)
        and all(isinstance(c, dict) and isinstance(c.get("function"), dict) for c in calls)
    )


def count_of(value: object, key: str) -> int:
    """A count a provider's JSON gives (tokens, a time) under `key`; 0 where it gives none that is one."""
    found = value.get(key) if isinstance(value, dict) else None
    return found if isinstance(found, int) and not isinstance(found, bool) else 0


def stream_cut_off() -> Exception:
    """A stream that ended before its answer did (every provider's stream ends by saying it is done)."""
    return errors.transient("the model's stream ended before its answer did", "ModelUnavailable")
