"""A page of a list: how many, from where, in which order, and the metadata its items must contain."""

from __future__ import annotations

from infra.store.tables import Page

__all__ = ["Page"]
