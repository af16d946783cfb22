"""Canonical names for resources created without one (agents, projects): as on Julep, one is made, here an
identifier from the display name and a random suffix (Julep drew random words)."""

from __future__ import annotations

import re
import secrets


def canonical_name(name: str | None, kind: str) -> str:
    """`My Agent!` -> `my_agent_3f2a`; a name that does not start with a letter is prefixed with `kind`."""
    stem = re.sub(r"[^a-zA-Z0-9]+", "_", name or "").strip("_").lower()[:40]
    stem = stem if stem[:1].isalpha() else f"{kind}_{stem}".rstrip("_")
    return f"{stem}_{secrets.token_hex(2)}"
