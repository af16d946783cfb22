"""`dummy`: Julep's stand-in provider, which calls no service: it answers the call's arguments as they are
(the tool's pre-set `arguments` under the step's), whatever its method and setup."""

from __future__ import annotations

from activities.integrations.common import Service
from contracts.json import JsonObject

DEFAULT_BASE_URL = ""  # (no service)
METHODS = ("echo",)


async def call(service: Service, method: str, setup: JsonObject, arguments: JsonObject) -> JsonObject:
    return arguments
