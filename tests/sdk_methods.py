"""Every method of the official julep SDK (2.21, sync client), found at run time, and what it must answer.

Used by tests/test_sdk_methods.py: `sdk_methods` lists the methods, `declared_return` reads the type each one
says it returns, and `problems` says where an answer is not that type or leaves a required field out.
"""

from __future__ import annotations

import inspect
import sys
import time
import typing
from typing import Any

import pydantic
from julep import Julep, Stream
from julep._resource import SyncAPIResource

# Views of the same methods that answer raw HTTP responses instead of models: not methods of their own.
WRAPPERS = {"with_raw_response", "with_streaming_response"}
TERMINAL = {"succeeded", "failed", "cancelled"}
TIMEOUT = 60.0


def _walk(resource: SyncAPIResource, path: str) -> dict[str, Any]:
    found = {}
    for name in dir(resource):
        if name.startswith("_") or name in WRAPPERS:
            continue
        value = getattr(resource, name)
        where = f"{path}.{name}" if path else name
        if isinstance(value, SyncAPIResource):
            found.update(_walk(value, where))
        elif inspect.ismethod(value) and path:  # the client's own get/post/... are transport, not API
            found[where] = value
    return found


def bound_methods(client: Julep) -> dict[str, Any]:
    """Each public method of each resource and sub-resource, by its dotted path from the client."""
    return _walk(client, "")  # type: ignore[arg-type]  # the client is walked like a resource


def sdk_methods(client: Julep) -> list[str]:
    return sorted(bound_methods(client))


def declared_return(method: Any) -> Any:
    """The method's return annotation, resolved in its own module (`get_type_hints` would also resolve the
    argument types, and some of those name classes the SDK never imports)."""
    annotation = inspect.signature(method).return_annotation
    if isinstance(annotation, str):
        annotation = eval(annotation, vars(sys.modules[method.__module__]))  # noqa: S307  # the SDK's own text
    return annotation


def _item_type(declared: Any) -> Any:
    args = typing.get_args(declared)
    return args[0] if args else Any


def instance_of(value: Any, declared: Any) -> bool:
    """`value` is of the declared type: unions by any branch, lists and pages by every item."""
    origin = typing.get_origin(declared)
    if declared in (object, Any):
        return True
    if origin is typing.Union:
        return any(instance_of(value, branch) for branch in typing.get_args(declared))
    if origin is list:
        return isinstance(value, list) and all(instance_of(v, _item_type(declared)) for v in value)
    if origin is not None:  # a page or a stream of a model
        if not isinstance(value, origin):
            return False
        items = getattr(value, "items", None)
        return not isinstance(items, list) or all(instance_of(v, _item_type(declared)) for v in items)
    return isinstance(value, declared)


def missing_fields(value: Any, where: str) -> list[str]:
    """Fields the SDK's models require (no default) that are absent or null in `value`, at any depth. The SDK
    builds its models without validating, so a missing field shows only here."""
    if isinstance(value, list):
        return [m for i, item in enumerate(value) for m in missing_fields(item, f"{where}[{i}]")]
    if not isinstance(value, pydantic.BaseModel):
        return []
    found = []
    for name, field in type(value).model_fields.items():
        item = getattr(value, name, None)
        if item is None and field.is_required():
            found.append(f"{where}.{name}")
        found += missing_fields(item, f"{where}.{name}")
    return found


def _answer_type(declared: Any) -> Any:
    """The type the JSON body must validate as: a page's items, a union's non-stream branches."""
    origin = typing.get_origin(declared)
    if origin is typing.Union:
        branches = [b for b in typing.get_args(declared) if typing.get_origin(b) is not Stream]
        return typing.Union[tuple(branches)] if branches else None  # noqa: UP007  # built at run time
    if declared is object or origin is Stream:
        return None
    if origin is not None and origin is not list:
        return list[_item_type(declared)]  # type: ignore[misc]
    return declared


def type_errors(declared: Any, body: Any) -> list[str]:
    """Where the JSON body fails the SDK's own model when validated (wrong types, nulls, missing fields)."""
    kind = _answer_type(declared)
    if kind is None:
        return []
    if typing.get_origin(declared) not in (None, typing.Union) and isinstance(body, dict):
        body = body.get("items")  # a page's items; the SDK unwraps a list from `{"items": [...]}` too
    try:
        pydantic.TypeAdapter(kind).validate_python(body)
    except pydantic.ValidationError as error:
        return [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors()]
    return []


def problems(name: str, value: Any, declared: Any, body: Any) -> list[str]:
    """Everything wrong with the answer `value` (JSON `body`) of the method `name` that declares `declared`."""
    if not instance_of(value, declared):
        return [f"{name} answered {type(value).__name__}, not {declared}"]
    if isinstance(value, Stream):
        events = list(value)  # a stream needs only to end cleanly; what it sent must still be whole
        found = [m for i, e in enumerate(events) for m in missing_fields(e, f"{name}[{i}]")]
        return found or ([] if events else [f"{name} streamed nothing"])
    return missing_fields(value, name) + type_errors(declared, body)


def wait_doc_indexed(client: Julep, doc_id: str) -> None:
    """A search finds a doc only once it is embedded; Mint says so in the doc's `status` (not in the SDK)."""
    deadline = time.monotonic() + TIMEOUT
    while (client.docs.get(doc_id).model_extra or {}).get("status") == "pending":
        assert time.monotonic() < deadline, f"doc {doc_id} stayed pending"
        time.sleep(0.1)


def wait_execution(client: Julep, execution_id: str, statuses: set[str] = TERMINAL) -> Any:
    deadline = time.monotonic() + TIMEOUT
    while (execution := client.executions.get(execution_id)).status not in statuses:
        assert time.monotonic() < deadline, f"execution stayed {execution.status}"
        time.sleep(0.05)
    return execution
