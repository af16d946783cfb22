"""The activities of ScheduledRunWorkflow (workflows/scheduled.py), which a Temporal Schedule starts at each
firing: here, in the process layer, because they start executions through the services (the API's own launch
path), which activities/ may not import. The worker registers them on its main queue (process/worker.py)."""

from __future__ import annotations

from dataclasses import replace

from temporalio import activity

from contracts.schedules import (
    AWAIT_SCHEDULED_RUN,
    CANCEL_SCHEDULED_RUN,
    LAUNCH_SCHEDULED_RUN,
    SCHEDULED_RUN_ENDED,
    Firing,
    Launched,
    ScheduledExecution,
)
from infra.settings import Settings
from infra.temporal.errors import permanent, transient
from infra.temporal.search_attributes import missing_search_attributes
from services.clients import Clients
from services.errors import Invalid, NotFound, ServiceError, WrongState
from services.schedules import firing


class ScheduledRuns:
    def __init__(self, clients: Clients, settings: Settings):
        self.clients = clients
        self.settings = settings

    @activity.defn(name=LAUNCH_SCHEDULED_RUN)
    async def launch_scheduled_run(self, fired: Firing) -> Launched:
        """The execution started (the same for a retried attempt: the firing is its idempotency key); none
        when the schedule is gone."""
        try:
            return await firing.launch_firing(self.clients, await self._settings(), fired)
        except (NotFound, Invalid, WrongState) as exc:  # the task or its input: trying again cannot help
            raise permanent(exc.message, type(exc).__name__) from None
        except ServiceError as exc:  # Temporal or Postgres away, the developer at their limit: later
            raise transient(exc.message, type(exc).__name__) from None

    @activity.defn(name=AWAIT_SCHEDULED_RUN)
    async def await_scheduled_run(self, run: ScheduledExecution) -> None:
        """Returns when the execution has ended (heartbeating meanwhile, so a cancel reaches it)."""
        await firing.await_execution(self.clients, run, activity.heartbeat)

    @activity.defn(name=SCHEDULED_RUN_ENDED)
    async def scheduled_run_ended(self, run: ScheduledExecution) -> bool:
        """Whether the execution has ended (asked now and then of a long run, holding no slot between)."""
        return await firing.execution_ended(self.clients, run)

    @activity.defn(name=CANCEL_SCHEDULED_RUN)
    async def cancel_scheduled_run(self, run: ScheduledExecution) -> None:
        await firing.cancel_execution(self.clients, run)

    async def _settings(self) -> Settings:
        """The settings with `auto` search attributes resolved (once), quietly: the API said what is missing."""
        if self.settings.search_attributes == "auto":
            missing = await missing_search_attributes(self.clients.temporal, self.settings.temporal_namespace)
            self.settings = replace(self.settings, search_attributes="on" if missing == [] else "off")
        return self.settings
