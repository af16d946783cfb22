"""The steps that compute without calling out or waiting: evaluate, set, get, log, return and error. Each
is a value of its inputs and the execution's state, so the interpreter runs them inline."""

from __future__ import annotations

from typing import Any

from contracts.json import JsonObject
from workflows import language as lang
from workflows.failures import Returned, TypedFailure
from workflows.transition_log import Logged
from workflows.values import Names, ValueEvaluator


def run_pure_step(
    step: lang.PureStep, value: Any, names: Names, values: ValueEvaluator, state: JsonObject, legacy: bool
) -> Any:
    """The step's output; `state` is the execution's, which set changes in place."""
    match step:
        case lang.EvaluateStep():
            return values.value(dict(step.evaluate), names)  # one result, measured whole
        case lang.SetStep():
            updates = values.value(dict(step.set), names)
            state.update(updates)
            return updates
        case lang.GetStep():
            return state.get(step.get)
        case lang.LogStep():
            # Julep's log: the rendered text goes to the transition's metadata and the input passes through.
            text = values.template(step.log, names)
            return text if legacy else Logged(value, text)  # legacy: the output a history recorded before
        case lang.ReturnStep():
            raise Returned(values.value(step.return_, names))
        case lang.ErrorStep():
            raise TypedFailure("TaskError", str(values.template(step.error, names)))
