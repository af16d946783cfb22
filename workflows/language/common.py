"""What the task language's models share: names, durations, and Julep v1's leniency about unknown keys."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Annotated, TypeAlias

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr, model_validator
from pydantic_core import to_jsonable_python

from contracts.json import JsonObject

NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_\-]*$"
Seconds = Annotated[float, Field(gt=0, le=30 * 86400)]

if TYPE_CHECKING:
    JsonField: TypeAlias = JsonObject
else:
    # A field of JSON the user shapes (metadata, model settings, a schema). pydantic cannot read
    # contracts/json.py's recursive aliases, so it takes any values and makes them JSON, as storing the task
    # would (a YAML date becomes its ISO text).
    JsonField = Annotated[dict[str, object], AfterValidator(to_jsonable_python)]


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
