"""The records the executions' routes answer with. An execution and a transition are the store's records
(infra/store/execution_records.py), named here only for api/, which imports no store
(tests/test_api_imports_no_store.py); services import them from the store. A timer is read from Temporal's
history (services/executions/timers.py), not from a row."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from infra.store.execution_records import Execution, Transition

__all__ = ["Execution", "Timer", "Transition"]


@dataclass(frozen=True)
class Timer:
    """An open timer of an execution's workflow: a `sleep`, or the time limit of a `wait_for_input`."""

    started_at: datetime
    fires_at: datetime
    seconds: float
