"""How a run asks whether it takes a change of behaviour that replays must respect.

A run recorded before a change replays the old behaviour: the SDK's patch markers (`workflow.patched`) say
which it took. Asking for a marker costs every new run a command and an upsert of the TemporalChangeVersion
search attribute, so a run started now is told in its input which changes it starts with
(contracts/executions.py ExecutionParams.patches, listed by workflows/execution.py CURRENT_PATCHES) and
records no marker for them."""

from __future__ import annotations

from collections.abc import Iterable

from temporalio import workflow


class Patches:
    """`patches(patch_id)`: whether this run takes the change `patch_id`."""

    def __init__(self, started_with: Iterable[str] = ()) -> None:
        self.started_with = frozenset(started_with)

    def __call__(self, patch_id: str) -> bool:
        return patch_id in self.started_with or workflow.patched(patch_id)
