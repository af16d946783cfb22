"""What a request should know but Julep's answer has no key for: said in the answer's `Warning` header.

Julep's bodies take unknown keys silently, and clients written for Julep (or for a newer Julep) send some.
Mint ignores them too, but not silently: each is logged and listed in the header
(`299 mint "unknown key `nmae` in AgentCreate ignored: did you mean `name`?"`), so a typo can still be found.
The request bodies note what they ignore while FastAPI parses them (api/schemas/common.py RequestBody). A
task's warnings (how its strings were read) go there too (`note`): Julep's task has no key for them. The
middleware here gives each request its own list and turns it into the header.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Iterable
from contextvars import ContextVar

from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("mint.api")

# What this request is told (None outside a request: a body parsed elsewhere notes nothing).
_SAID: ContextVar[list[str] | None] = ContextVar("warnings_said", default=None)
MAX_LISTED = 20  # a header of reasonable size, whatever a body carries


def note(text: str) -> None:
    """Say `text` in this request's answer (the first MAX_LISTED things said, each cut to 300 characters)."""
    said = _SAID.get()
    if said is not None and len(said) < MAX_LISTED:
        said.append(_printable(text[:300]))


def note_ignored(model: str, keys: Iterable[str], known: Iterable[str]) -> None:
    """Note that a body of `model` had these unknown `keys` (its fields are `known`)."""
    known = list(known)
    for key in list(keys)[:MAX_LISTED]:
        key = key[:100]  # compared and said: a long key costs no more than this
        close = difflib.get_close_matches(key, known, n=1)
        hint = f": did you mean `{close[0]}`?" if close else ""
        note(f"unknown key `{key}` in {model} ignored{hint}")


def _printable(text: str) -> str:
    """Text as it may go in a header and a log line: it may hold a client's (a key), so no line breaks (a
    header of the client's making) or other control characters, and only Latin-1 (what a header carries)."""
    return "".join(c if " " <= c <= "~" or "\xa0" <= c <= "\xff" else "?" for c in text)


class WarningHeader:
    """Gives each HTTP request a list for what it should be told, and answers it in `Warning` headers."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        said: list[str] = []
        token = _SAID.set(said)

        async def send_with_warning(message: Message) -> None:
            if message["type"] == "http.response.start" and said:
                log.info("%s %s: %s", scope.get("method"), scope.get("path"), "; ".join(said))
                headers = list(message.get("headers", []))
                for text in said:
                    quoted = text.replace("\\", "\\\\").replace('"', '\\"')
                    headers.append((b"warning", f'299 mint "{quoted}"'.encode("latin-1", "replace")))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_warning)
        finally:
            _SAID.reset(token)
