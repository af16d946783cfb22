"""The steps that block on time or on a person: `sleep`, a durable timer, and `wait_for_input`, which parks
the execution until a resume input addressed to it arrives (also used by a prompt's function tool call)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from temporalio import workflow

from contracts.json import JsonObject
from contracts.transitions import Position
from workflows import language as lang
from workflows.failures import StepFailed, TypedFailure
from workflows.inbox import Inbox
from workflows.input_schema import normalize_input_schema
from workflows.transition_log import TransitionLog
from workflows.values import Names, ValueEvaluator
from workflows.visibility import Visibility, quoted, where
from workflows.webhooks import Webhooks

EARLY_RESUME_PATCH = "a-resume-before-its-wait-opens-answers-it"
# Before this patch a timed-out wait's `default` was its output as written (`$ "x"` the text `$ "x"`); it is
# now read as `info` is. Runs recorded before it keep the old output when replayed.
DEFAULT_EVALUATED_PATCH = "wait-for-input-default-is-evaluated"


class Waits:
    def __init__(
        self,
        log: TransitionLog,
        inbox: Inbox,
        values: ValueEvaluator,
        chunk_items: int | None,
        view: Visibility,
        patched: Callable[[str], bool] = workflow.patched,  # workflows/patches.py Patches
    ):
        self.log = log
        self.inbox = inbox
        self.values = values
        self.view = view
        self.patched = patched
        self.webhooks: Webhooks | None = None  # told of each wait that opens and closes
        # Set when running part of a large fan-out (chunks of up to this many items) in a child workflow,
        # which no resume can reach.
        self.chunk_items = chunk_items

    async def sleep(self, step: lang.SleepStep, value: Any, names: Names, position: Position) -> Any:
        if isinstance(step.sleep, lang.SleepFor):
            parts = {
                unit: self.values.value(getattr(step.sleep, unit), names)
                for unit in ("seconds", "minutes", "hours", "days")
            }
            seconds = (
                _number(parts["seconds"])
                + 60 * _number(parts["minutes"])
                + 3600 * _number(parts["hours"])
                + 86400 * _number(parts["days"])
            )
        else:
            seconds = _number(self.values.value(step.sleep, names))
        if seconds < 0:
            raise StepFailed(f"sleep must not be negative (got {seconds} seconds)")
        await self.log.flush()
        if seconds:
            self.log.sleeping += 1
            until = (workflow.now() + timedelta(seconds=seconds)).isoformat(timespec="seconds")
            try:
                with self.view.doing(f"{where(position, step.label)} · sleeping until {until}") as summary:
                    await workflow.sleep(seconds, summary=summary)
            finally:
                self.log.sleeping -= 1
        return value  # sleeping does not change `_`

    async def wait_for_input(
        self, step: lang.WaitForInputStep, names: Names, position: Position, metadata: JsonObject | None
    ) -> Any:
        """A wait_for_input step: its `info`, evaluated, and its `schema` go on the `wait` transition, where
        GET /executions/{id} reads them (infra/store/execution_records.py read_open_wait)."""
        wait = step.wait_for_input
        output: JsonObject = {"info": self.values.value(wait.info, names)}
        schema = normalize_input_schema(wait.schema_)
        if schema is not None:
            output["schema"] = schema
        return await self.wait(
            output, position, metadata, wait.timeout, wait, label=step.label, names=names, schema=schema
        )

    async def wait(
        self,
        output: JsonObject,
        position: Position,
        metadata: JsonObject | None,
        timeout: float | None = None,
        on_timeout: lang.WaitInfo | None = None,
        label: str | None = None,
        names: Names | None = None,
        schema: JsonObject | None = None,
    ) -> Any:
        """Park the execution in `awaiting_input` until PUT /executions/{id} resumes it (or `timeout` passes).

        The resume names this wait by the seq of its `wait` transition, so a duplicate or late resume can
        never answer a different question; several waits may be open at once (map items, branches). On a
        timeout with `on_timeout: continue`, the output is `default`, evaluated with `names` as `info` is.
        An input that does not satisfy `schema` is dropped (the API refuses it first: this guards a signal
        sent to Temporal directly, or one a race handed to another wait)."""
        # Resumes reach the execution's own workflow, not the child running this item.
        if self.chunk_items is not None:
            raise StepFailed(
                f"{position.workflow}[{position.step}]: cannot wait for input inside a fan-out of more than "
                f"{self.chunk_items} items; split the list so each part has at most {self.chunk_items}"
            )
        self.log.open_waits += 1
        self.log.add("wait", output, position, label=label, metadata=metadata)
        wait_seq, wait_id = self.log.seq, self.log.pending[-1]["id"]
        self.inbox.opened(wait_seq, schema)
        # Before this patch a resume that came before its wait opened was dropped (see inbox.py).
        if wait_seq in self.inbox.early and self.patched(EARLY_RESUME_PATCH):
            self.inbox.take_early(wait_seq)
        self.view.waiting(wait_seq, _asks(output, where(position, label)))
        await self.log.flush()
        if self.webhooks is not None:
            info = output["info"] if "info" in output else output.get("tool_call")
            await self.webhooks.waiting(
                wait_seq, {"id": wait_id, "step": label or where(position), "info": info}
            )
        try:
            await workflow.wait_condition(lambda: wait_seq in self.inbox.answers, timeout=timeout)
            received = self.inbox.answers.pop(wait_seq)
        except TimeoutError:
            if on_timeout is None or on_timeout.on_timeout == "fail":
                raise TypedFailure(
                    "WaitTimeout", f"{position.workflow}[{position.step}]: no input within {timeout} seconds"
                ) from None
            received = on_timeout.default
            if names is not None and self.patched(DEFAULT_EVALUATED_PATCH):
                received = self.values.value(on_timeout.default, names)
            metadata = {**(metadata or {}), "timed_out": True}
        finally:
            self.log.open_waits -= 1
            self.inbox.closed(wait_seq)
            self.view.answered(wait_seq)
            if self.webhooks is not None:
                self.webhooks.answered(wait_seq)
        self.log.add("resume", received, position, metadata={**(metadata or {}), "wait_seq": wait_seq})
        return received


def _asks(output: JsonObject, place: str) -> str:
    """What a wait asks for, in a line: a wait_for_input step's `info`, or the function tool to run."""
    call = output.get("tool_call")
    if isinstance(call, dict):
        return f"{place} · run function tool {call.get('name')} with {quoted(call.get('arguments'))}"
    return f"{place} · {quoted(output.get('info'))}"


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise StepFailed(f"sleep needs a number of seconds, got {value!r}")
    return float(value)
