"""The `openai` and `anthropic` SDKs, imported on first use.

Together they are 2.5 s of a process's start on a small machine (a worker's, the API's, the CLI's): a worker
started in place of a lost one should be polling before it has paid that. A model call imports its SDK in a
thread the first time (`imported`), so the event loop keeps serving meanwhile; a process that serves only the
API imports both in a thread once it serves (`warm`), so that its first chat rarely waits. A worker does not:
an import holds the interpreter for seconds, and a worker that has just started has workflows to replay."""

from __future__ import annotations

import asyncio
import importlib
import sys
import threading
from types import ModuleType

NAMES = ("openai", "anthropic")


def sdk(name: str) -> ModuleType:
    """The `openai` or `anthropic` module (imported now if it was not yet: Python keeps it after)."""
    return importlib.import_module(name)


async def imported(name: str) -> ModuleType:
    """The SDK, imported in a thread if it was not yet."""
    module = sys.modules.get(name)
    return module if module is not None else await asyncio.to_thread(sdk, name)


def warm() -> None:
    """Import the SDKs in a background thread. Not a daemon: a process asked to stop while it imports waits
    for the import to end (a second or two) rather than finalizing under it, which can crash the interpreter."""
    threading.Thread(target=lambda: [sdk(name) for name in NAMES], name="import-sdks").start()
