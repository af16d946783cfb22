"""The `openai` and `anthropic` SDKs, imported on first use.

Together they are 2.5 s of a process's start on a small machine (a worker's, the API's, the CLI's): a worker
started in place of a lost one should be polling before it has paid that. `warm` imports them in a thread
once the process serves, so a first model call rarely waits for the import either."""

from __future__ import annotations

import importlib
import threading
from types import ModuleType

NAMES = ("openai", "anthropic")


def sdk(name: str) -> ModuleType:
    """The `openai` or `anthropic` module (imported now if it was not yet: Python keeps it after)."""
    return importlib.import_module(name)


def warm() -> None:
    """Import the SDKs in a background thread. Not a daemon: a process asked to stop while it imports waits
    for the import to end (a second or two) rather than finalizing under it, which can crash the interpreter."""
    threading.Thread(target=lambda: [sdk(name) for name in NAMES], name="import-sdks").start()
