"""How Mint's payloads become JSON and back: the SDK's JSON conversion, minus two costs on hot paths.

- Encoding: the SDK turns a dataclass into a dict with `dataclasses.asdict`, which deep-copies every value
  inside (whole transition batches, map items, a frame's inputs). PayloadEncoder hands json the fields as
  they are instead; the JSON text is the same (the SDK sorts keys anyway).
- Decoding: the SDK builds a dataclass by re-reading its type hints and converting every field and item
  (measured: about 0.3 ms per transition row of a batch). The types in contracts/ are Mint's own payloads,
  written by Mint's own code and sealed (infra/temporal/payload_codec.py), so ContractTypes builds them from the JSON
  values as they are, converting only the nested contract dataclasses; other types go the SDK's way.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable
from typing import Any

from temporalio.converter import AdvancedJSONEncoder, JSONPlainPayloadConverter, JSONTypeConverter

Build = Callable[[Any], Any]
CONTRACTS = "contracts"


class PayloadEncoder(AdvancedJSONEncoder):
    """A dataclass as its fields, without asdict's deep copy (json recurses into nested ones itself)."""

    def default(self, o: Any) -> Any:
        if dataclasses.is_dataclass(o) and not isinstance(o, type):
            return {f.name: getattr(o, f.name) for f in dataclasses.fields(o)}
        return super().default(o)


class ContractTypes(JSONTypeConverter):
    """Builds the payload types of contracts/ from decoded JSON (see the module's docstring)."""

    def to_typed_value(self, hint: type, value: Any) -> Any | None:
        build = _builder(hint)
        return JSONTypeConverter.Unhandled if build is None else build(value)


def json_converter() -> JSONPlainPayloadConverter:
    """The SDK's JSON payload converter with PayloadEncoder and ContractTypes."""
    return JSONPlainPayloadConverter(encoder=PayloadEncoder, custom_type_converters=[ContractTypes()])


def _same(value: Any) -> Any:
    return value


def _is_contract(hint: Any) -> bool:
    return isinstance(hint, type) and hint.__module__.split(".")[0] == CONTRACTS


@functools.cache
def _builder(hint: Any) -> Build | None:
    """How to build `hint` from JSON, or None when `hint` involves no contract type (the SDK's job)."""
    if _is_contract(hint) and dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _dataclass_builder(hint)
    if _is_contract(hint) and typing.is_typeddict(hint):
        return _same  # a dict at run time: the JSON object is the value
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is list and len(args) == 1 and (item := _builder(args[0])) is not None:
        return _same if item is _same else functools.partial(_list, item)
    if origin in (typing.Union, types.UnionType) and type(None) in args and len(args) == 2:
        (inner,) = [a for a in args if a is not type(None)]
        member = _builder(inner)
        return None if member is None else functools.partial(_optional, member)
    return None


def _dataclass_builder(cls: type) -> Build:
    hints = typing.get_type_hints(cls)
    nested = {f.name: _builder(hints[f.name]) for f in dataclasses.fields(cls) if f.init}
    names = list(nested)
    convert = {name: build for name, build in nested.items() if build not in (None, _same)}

    def build(value: Any) -> Any:
        if not isinstance(value, dict):
            raise TypeError(f"expected a JSON object for {cls.__name__}, got {type(value).__name__}")
        # Unknown keys are ignored and missing ones take their defaults, as the SDK does.
        given = {name: value[name] for name in names if name in value}
        for name, convert_field in convert.items():
            if name in given:
                given[name] = convert_field(given[name])
        return cls(**given)

    return build


def _list(item: Build, value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError(f"expected a JSON array, got {type(value).__name__}")
    return [item(v) for v in value]


def _optional(member: Build, value: Any) -> Any:
    return None if value is None else member(value)


def from_json(hint: Any, value: Any) -> Any:
    """`value`, decoded JSON, built as the payload type `hint` (a contract dataclass, or a TypedDict or plain
    JSON value, which stay as they are): for a payload nested as JSON inside another (WorkerCall.request)."""
    build = _builder(hint)
    return value if build is None else build(value)
