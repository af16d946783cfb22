"""What the task language's models share: names, durations, and Julep v1's leniency about unknown keys."""

from __future__ import annotations

import functools
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_\-]*$"
Seconds = Annotated[float, Field(gt=0, le=30 * 86400)]


class Lenient(BaseModel):
    """A model that takes keys it does not know, as Julep v1's did, and sets them aside: they are not kept,
    and `ignored_keys` names them for the creation answer's warnings (workflows/validate.py), which also
    refuses the ones that signal a mistake rather than a Julep habit."""

    model_config = ConfigDict(extra="allow")
    _ignored: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="after")
    def _set_aside_unknown_keys(self) -> Lenient:
        if self.__pydantic_extra__:
            self._ignored = tuple(self.__pydantic_extra__)
            object.__setattr__(self, "__pydantic_extra__", {})  # so they are never dumped or stored
        return self

    @property
    def ignored_keys(self) -> tuple[str, ...]:
        return self._ignored


@functools.cache
def model_keys(model: type[BaseModel]) -> tuple[str, ...]:
    """The keys a model reads, as users write them (`if`, `json`, not `if_`, `json_`)."""
    return tuple(field.alias or name for name, field in model.model_fields.items())
