"""`dummy`: Julep's stand-in provider, which calls no service: it answers the call's arguments as they are
(the tool's pre-set `arguments` under the step's), whatever its method and setup."""

from __future__ import annotations

from typing import Any

DEFAULT_BASE_URL = ""  # (no service)


async def call(service: Any, method: str, setup: dict[str, Any], arguments: dict[str, Any]) -> Any:
    return arguments
