"""A payload as the JSON object it travels as, for code that takes the dict form."""

from __future__ import annotations

import dataclasses
from typing import Any


def plain(value: Any) -> Any:
    """A dataclass as a dict, recursing only into dataclasses: like `dataclasses.asdict`, without its deep
    copy of every value inside (whole message lists, transition batches)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return value
