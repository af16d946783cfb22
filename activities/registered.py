"""Every activity a worker registers, found by its name: contracts/temporal.py ACTIVITIES declares the names
(and their payloads), and each is implemented by a method of that name, `@activity.defn(name=...)` under the
same name. The worker (process/worker.py) and the fast test layer's fakes (tests/unit/fakes.py) both take their
activities from here, so neither lists them again, and a name left without an implementation fails when the
worker is built, not when a workflow first calls it.

Light on purpose (the SDK and contracts/ only): the fakes import it without every activity's clients."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from temporalio import activity

from contracts.temporal import ACTIVITIES

Activity = Callable[..., Any]


def activities_by_name(*holders: object, names: Iterable[str] = ACTIVITIES) -> dict[str, Activity]:
    """Each name's activity: the one method of that name, among the `holders`' methods, that Temporal
    registers under it. Raises when a name has none, or more than one."""
    found: dict[str, Activity] = {}
    for name in names:
        implementations = [
            method
            for holder in holders
            if callable(method := getattr(holder, name, None)) and _registered_name(method) == name
        ]
        if len(implementations) != 1:
            raise LookupError(
                f"activity {name!r} needs exactly one implementation, found {len(implementations)}"
            )
        found[name] = implementations[0]
    return found


def _registered_name(method: Activity) -> str | None:
    """The name Temporal registers the method under (what `@activity.defn` recorded on it), if any."""
    definition = activity._Definition.from_callable(method)
    return definition.name if definition is not None else None
