"""What is declared once and implemented elsewhere agrees: the worker and the fast layer's fakes register
every activity contracts/temporal.py declares, and no other; every integration provider
workflows/integrations.py declares has its module in activities/integrations/, and no module is undeclared."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import typing
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
from temporalio import activity

import activities.integrations as integrations
from activities.integrations.common import Provider
from contracts.temporal import ACTIVITIES, CALL_IN_WORKER, WORKER_CALLS
from process.worker import WorkerActivities, activity_table
from tests.unit.fakes import Fakes
from workflows.integrations import PROVIDERS


def _names(functions: list[Callable[..., Any]]) -> list[str]:
    return [activity._Definition.must_from_callable(f).name for f in functions]


def _unbuilt_worker_activities() -> WorkerActivities:
    """The worker's activity objects without their clients: only their methods are looked at."""
    types = typing.get_type_hints(WorkerActivities).values()
    return WorkerActivities(*(cls.__new__(cls) for cls in types))


def test_the_worker_registers_every_declared_activity_under_its_name():
    table = activity_table(_unbuilt_worker_activities())
    assert set(table) == set(ACTIVITIES)
    assert _names(list(table.values())) == list(table)


def test_the_fakes_fake_every_declared_activity_under_its_name():
    assert sorted(_names(Fakes().activities())) == sorted(ACTIVITIES)


def test_the_worker_runs_every_declared_worker_call_in_the_worker():
    in_worker = activity_table(_unbuilt_worker_activities())[CALL_IN_WORKER].__self__
    assert set(in_worker.calls) == WORKER_CALLS


def _provider_modules() -> dict[str, ModuleType]:
    """Every module in activities/integrations/ that has a `call`: the providers' (the rest are their helpers)."""
    found = {}
    for info in pkgutil.iter_modules(integrations.__path__):
        module = importlib.import_module(f"{integrations.__name__}.{info.name}")
        if hasattr(module, "call"):
            found[info.name] = module
    return found


def test_every_declared_provider_has_its_module_and_every_module_is_declared():
    assert sorted(_provider_modules()) == sorted(PROVIDERS)
    assert sorted(integrations.MODULES) == sorted(PROVIDERS)


@pytest.mark.parametrize("name", sorted(PROVIDERS))
def test_each_provider_module_keeps_the_provider_contract(name):
    module = _provider_modules()[name]
    assert isinstance(module, Provider)
    assert isinstance(module.DEFAULT_BASE_URL, str)
    assert inspect.iscoroutinefunction(module.call)
    expected = list(inspect.signature(Provider.call).parameters)[1:]  # (less self)
    assert list(inspect.signature(module.call).parameters) == expected


@pytest.mark.parametrize("name", sorted(PROVIDERS))
def test_each_provider_module_implements_the_methods_declared_for_it(name):
    assert sorted(_provider_modules()[name].METHODS) == sorted(PROVIDERS[name].methods)
