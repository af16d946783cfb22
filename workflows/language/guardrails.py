"""Guardrails (seed 004, JAF): checks on what goes into an agent or a task and what comes out of it.

A guardrail is either a `check` (an expression over `_`, the value checked: truthy lets it through) with the
`message` a refusal gives, or a `prompt` (a template over `_`) that a `model` answers with `{"allowed",
"reason"}`. Agents and tasks carry `guardrails: {input: [...], output: [...]}`; workflows/guardrails.py runs
them, and services/chat/guardrails.py in a chat.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

from contracts.json import JsonObject
from workflows.language.common import NAME_PATTERN

# (path, raw text, how it is read: `expression` or `template`): what task validation checks statically.
GuardrailField = tuple[str, str, str]


class Guardrail(BaseModel):
    """One guardrail: a `check` expression with its `message`, or a `prompt` a `model` answers."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: Annotated[str, Field(min_length=1, max_length=120, pattern=NAME_PATTERN)]
    check: Annotated[str, Field(min_length=1)] | None = None
    message: str | None = None  # a template; unset: a plain sentence naming the guardrail
    prompt: Annotated[str, Field(min_length=1)] | None = None
    model: Annotated[str, Field(min_length=1)] | None = None  # unset: the agent's model

    @model_validator(mode="after")
    def _one_kind(self) -> Guardrail:
        if (self.check is None) == (self.prompt is None):
            raise ValueError(
                "a guardrail needs exactly one of `check` (an expression) or `prompt` (a template)"
            )
        if self.check is not None and self.model is not None:
            raise ValueError("`model` goes with a `prompt` guardrail, not a `check` one")
        if self.prompt is not None and self.message is not None:
            raise ValueError("a `prompt` guardrail's model gives the reason: it takes no `message`")
        return self

    def fields(self, path: str) -> Iterator[GuardrailField]:
        """The guardrail's expression and templates, with their paths and readings."""
        if self.check is not None:
            yield f"{path}.check", self.check, "expression"
        if self.message is not None:
            yield f"{path}.message", self.message, "template"
        if self.prompt is not None:
            yield f"{path}.prompt", self.prompt, "template"


class Guardrails(BaseModel):
    """An agent's or a task's guardrails: `input` ones run on what comes in, `output` ones on what goes out."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    input: Annotated[list[Guardrail], Field(max_length=20)] = Field(default_factory=list)
    output: Annotated[list[Guardrail], Field(max_length=20)] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_names(self) -> Guardrails:
        for stage in ("input", "output"):
            names = [g.name for g in getattr(self, stage)]
            repeated = sorted({n for n in names if names.count(n) > 1})
            if repeated:
                raise ValueError(f"{stage} guardrail names must be unique: {', '.join(repeated)} repeated")
        return self

    def fields(self, path: str) -> Iterator[GuardrailField]:
        for stage in ("input", "output"):
            for i, guardrail in enumerate(getattr(self, stage)):
                yield from guardrail.fields(f"{path}.{stage}[{i}]")

    def dump(self) -> JsonObject:
        """JSON-ready, as users write it (unset fields left out)."""
        return self.model_dump(mode="json", exclude_none=True)
