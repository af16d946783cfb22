"""The workflow side of transitions: buffer them, then write each batch in one local activity.

Sequence numbers, ids and timestamps come from the workflow, so a replay produces the same rows and the
writer's `ON CONFLICT DO NOTHING` makes a repeated batch harmless.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, final

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

from contracts.json import JsonObject, JsonValue
from contracts.liveness import HEARTBEAT_TIMEOUT, WRITE_TIMEOUT
from contracts.temporal import MARK_FAILED, WRITE_TRANSITIONS
from contracts.transitions import Position, TransitionBatch, TransitionRow
from workflows.activation import Activation, new_uuid4
from workflows.storable import SURROGATE, find_unstorable, format_path

if TYPE_CHECKING:
    from random import Random

# Writes retry until Postgres answers: losing a transition is never an option.
WRITE_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=200), maximum_interval=timedelta(seconds=10)
)
# A batch stays far below Temporal's 2 MB payload limit, and a long run of pure steps still yields to the
# event loop now and then (a workflow task busy for 2 s counts as deadlocked).
MAX_BATCH_TRANSITIONS = 500
MAX_BATCH_BYTES = 512 * 1024
# Large values cross Temporal by reference (infra/temporal/claim_check.py); this bounds what one step may produce.
MAX_VALUE_BYTES = 64 * 1024 * 1024


# The metadata key of a log step's rendered text: user data, so checked and measured like an output.
LOG_NOTE = "log"
# json.dumps(value, ensure_ascii=False, allow_nan=False), built once (dumps builds an encoder per call) and
# called through iterencode, which is what encode() calls after two isinstance tests: those are slow inside
# the workflow sandbox, and every transition is encoded here.
_JSON = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


class UnrecordableValue(Exception):
    """A step produced a value that cannot be recorded (too large, not JSON, or text Postgres cannot store)."""


def encode(value: Any, where: Position, kind: str = "step") -> str:
    """JSON text Postgres can store. A value it cannot store fails the step here, deterministically and at
    once, naming the step and the field: NaN, infinities, integers past Python's 4,300-digit limit, NUL
    characters, lone surrogates, nesting past what json can write. (Written as it is, the writer's every
    retry would fail the same way.)"""
    # An init_branch records the arguments a yield passes to the workflow it starts (its position).
    if kind == "init_branch":
        what = f"the arguments of workflow {where.workflow!r}"
    elif kind == LOG_NOTE:
        what = f"the log text of {where.workflow}[{where.step}]"
    else:
        what = f"the output of {where.workflow}[{where.step}]"
    try:
        text = "".join(_JSON.iterencode(value, _one_shot=True))
    except ValueError as exc:
        problem = "an integer too long to write" if "digits" in str(exc) else "NaN or Infinity"
        raise UnrecordableValue(f"{what} contains {problem}, which JSON cannot hold") from None
    except RecursionError:
        raise UnrecordableValue(f"{what} is nested too deeply to record") from None
    # Cheap tests on the text first: json writes NUL as \u0000 (which a literal backslash can imitate, hence
    # the walk to confirm), and passes lone surrogates through, which only non-ASCII text can hold.
    if "\\u0000" in text or (not text.isascii() and SURROGATE.search(text)):
        for found in find_unstorable(value, limit=None, most=1):
            at = f" at {format_path(found.loc)}" if found.loc else ""
            raise UnrecordableValue(f"{what}{at} {found.message}")
    return text


def _check_size(encoded: str, where: Position, what: str) -> None:
    if len(encoded) > MAX_VALUE_BYTES:
        raise UnrecordableValue(
            f"the {what} of {where.workflow}[{where.step}] is {len(encoded)} bytes; "
            f"the limit is {MAX_VALUE_BYTES} bytes"
        )


def encode_output(kind: str, output: Any, current: Position, metadata: JsonObject | None) -> tuple[str, int]:
    """A transition's output as JSON text, and how many bytes of user data the transition holds (its output
    and a log step's text); raises UnrecordableValue for a value that cannot be recorded."""
    encoded = encode(output, current, kind)
    _check_size(encoded, current, "output")
    size = len(encoded)
    if metadata and LOG_NOTE in metadata:
        note = encode(metadata[LOG_NOTE], current, LOG_NOTE)
        _check_size(note, current, "log text")
        size += len(note)
    return encoded, size


def new_row(
    kind: str,
    encoded: str,
    current: Position,
    next_: Position | None,
    label: str | None,
    metadata: JsonObject | None,
    seq: int,
    row_id: str,
    created_at: str,
) -> TransitionRow:
    return {
        "id": row_id,
        "seq": seq,
        "type": kind,
        "output": encoded,  # JSON text: measured once (encode_output), stored as is by the writer
        "current": current.to_dict(),
        "next": next_.to_dict() if next_ else None,
        "step_label": label,
        "metadata": metadata or {},
        "created_at": created_at,
    }


class TransitionLog:
    """Buffers transitions and writes them in batches."""

    def __init__(
        self,
        execution_id: str,
        developer_id: str,
        collect: bool = False,
        on_status: Callable[[str, str | None], None] | None = None,
        write_queue: str | None = None,
    ):
        self.execution_id = execution_id
        self.developer_id = developer_id
        # A child workflow running part of a fan-out collects its transitions instead of writing them; the
        # parent adopts them (with its own sequence numbers) when the child returns.
        self.collect = collect
        # Told the status each batch writes (with the error of a failure): workflows/visibility.py shows it.
        self.on_status = on_status
        # Where background writes run (a task queue of their own, or None: the workflow's).
        self.write_queue = write_queue
        # A chunk's own run (see start_run): its transitions carry its run id, for traces.
        self.run_id: str | None = None
        self.run_scope: str | None = None
        self.run_announcement: JsonObject | None = None
        self.pending: list[TransitionRow] = []
        self.pending_bytes = 0
        self.seq = 0
        # The workflow's time as text, made once per activation (isoformat costs more than the rest of a pure
        # step's bookkeeping); the interpreter's, which also reads the rest of the activation's values.
        self.activation = Activation()
        self._random: Random | None = None
        self.open_waits = 0  # branches waiting for input (the status says awaiting_input meanwhile)
        self.sleeping = 0  # branches on a timer
        self._lock = asyncio.Lock()
        self._writer: asyncio.Future[None] | None = None
        # Set while no call in the worker carries a batch: batches are written one at a time, in order (the
        # writer skips rows at or below the last sequence number it holds, so a later batch landing first
        # would drop an earlier one).
        self._no_call_writing = asyncio.Event()
        self._no_call_writing.set()

    def start_run(self, run_id: str, scope_id: str, path: str) -> None:
        """This log records a run of its own (a fan-out chunk's child workflow) in its parent's frame: its
        transitions in that frame (scope `scope_id`) carry `run_id`, and the first also says where the run
        sits (the fan-out's body path) and when it started. Traces read them (infra/telemetry/traces.py)."""
        self.run_id, self.run_scope = run_id, scope_id
        self.run_announcement = {"run_path": path, "run_started_at": workflow.now().isoformat()}

    def run_of(self, scope_id: str) -> str:
        """The run id of the frame with this scope: its scope id, unless it is a chunk's borrowed frame."""
        return self.run_id if self.run_id is not None and scope_id == self.run_scope else scope_id

    def caller(self, scope_id: str, at: Position | None = None, item: JsonValue = None) -> JsonObject:
        """An init_branch's metadata, for traces: the run that yields and, for a nested yield, its step (a
        tail yield, `at` None, hands its run over to the workflow it yields to)."""
        if at is None:
            return {"caller_run_id": self.run_of(scope_id), "tail": True}
        step: JsonObject = {
            "workflow": at.workflow,
            "step": at.step,
            **({"item": item} if item is not None else {}),
        }
        return {"caller_run_id": self.run_of(scope_id), "caller_step": step}

    def add(
        self,
        kind: str,
        output: Any,
        current: Position,
        next_: Position | None = None,
        label: str | None = None,
        metadata: JsonObject | None = None,
    ) -> None:
        encoded, size = encode_output(kind, output, current, metadata)
        if self.run_id is not None and current.scope_id == self.run_scope:
            metadata = {**(metadata or {}), "run_id": self.run_id, **(self.run_announcement or {})}
            self.run_announcement = None
        self.seq += 1
        self.pending_bytes += size
        when = self.activation.tick()
        self.pending.append(
            new_row(kind, encoded, current, next_, label, metadata, self.seq, self._new_id(), when)
        )

    def _new_id(self) -> str:
        """A transition's id: workflow.uuid4()'s, from the same random bits, for a fraction of its cost."""
        if self._random is None:
            self._random = workflow.random()  # the run's one generator (reseeded in place, never replaced)
        return new_uuid4(self._random.getrandbits(128))

    def take(self) -> list[TransitionRow]:
        """Hand over the collected transitions (a child workflow's, for its parent to adopt); the last says
        that the chunk's run ends there (for traces)."""
        taken, self.pending, self.pending_bytes = self.pending, [], 0
        if taken and self.run_id is not None:
            taken[-1] = {**taken[-1], "metadata": {**taken[-1]["metadata"], "run_ended": self.run_id}}
        return taken

    def adopt(self, transitions: list[TransitionRow]) -> None:
        """Append transitions a child workflow collected, numbered in this log's sequence."""
        for transition in transitions:
            self.seq += 1
            self.pending_bytes += len(transition["output"])
            self.pending.append({**transition, "seq": self.seq})

    @property
    def full(self) -> bool:
        return len(self.pending) >= MAX_BATCH_TRANSITIONS or self.pending_bytes >= MAX_BATCH_BYTES

    def take_for_call(self) -> TransitionBatch | None:
        """The pending transitions as a batch for a call in the worker to write while it runs, or None when
        nothing is pending, this log collects, or another write is under way (they wait for the next one).
        Every batch taken is handed back to call_ended()."""
        writing = self._lock.locked() or (self._writer is not None and not self._writer.done())
        if self.collect or not self.pending or writing or not self._no_call_writing.is_set():
            return None
        batch, self.pending, self.pending_bytes = self.pending, [], 0
        self._no_call_writing.clear()
        status = "awaiting_input" if self.open_waits else "running"
        self._status(status)
        return TransitionBatch(self.execution_id, self.developer_id, batch, status)

    def call_ended(self, batch: TransitionBatch, written: bool) -> None:
        """The call that carried `batch` ended; unless it succeeded (and so wrote the batch), the batch goes
        back in front of what is pending, to be written again (which is harmless if it was written)."""
        if not written:
            self.pending = batch.transitions + self.pending
            self.pending_bytes += sum(len(t["output"]) for t in batch.transitions)
        self._no_call_writing.set()

    async def settle(self) -> None:
        """Wait for a write under way, and write what is pending after it: what is written next (a run of
        steps, workflows/step_runs.py) is then next in sequence."""
        if self._lock.locked() or (self._writer is not None and not self._writer.done()):
            await self.flush()

    def ran(self, count: int) -> None:
        """A run of steps wrote the next `count` transitions itself."""
        self.seq += count

    def submit(self) -> None:
        """Start writing what is pending without waiting for it (before an activity, which then runs
        alongside the write); one writer at a time keeps batches in sequence order."""
        if self.collect or not self._no_call_writing.is_set():
            return
        if self.pending and (self._writer is None or self._writer.done()):
            if self._writer is not None and not self._writer.cancelled() and self._writer.exception():
                return  # leave the failure for flush() to raise
            self._writer = asyncio.ensure_future(self._drain(None, None, None, once=True, background=True))

    @property
    def parked(self) -> bool:
        """Some branch waits for input or sleeps, which may take days."""
        return bool(self.open_waits or self.sleeping)

    async def flush(self, status: str | None = None, output: Any = None, error: str | None = None) -> None:
        """Write everything pending and wait for it (one local activity per batch); raises what a
        background write raised."""
        if self.collect:
            return
        if self._writer is not None:
            writer, self._writer = self._writer, None
            (outcome,) = await asyncio.gather(writer, return_exceptions=True)
            if isinstance(outcome, Exception):
                raise outcome
        await self._drain(status, output, error)

    async def fail(
        self,
        message: str,
        where: Position,
        error_type: str | None = None,
        details: JsonObject | None = None,
    ) -> None:
        """Write the `error` transition (naming the kind of failure, if it has one, and its `details`) and
        the `failed` status with it."""
        metadata = {"error_type": error_type, **(details or {})} if error_type else None
        self.add("error", {"error": message}, where, metadata=metadata)
        try:
            await self.flush(status="failed", error=message)
        except (ActivityError, ApplicationError):  # a local activity fails with the ApplicationError itself
            # The writer refused the batch (a Mint bug): still never leave the execution looking alive.
            await workflow.execute_local_activity(
                MARK_FAILED,
                TransitionBatch(self.execution_id, self.developer_id, [], "failed", error=message),
                start_to_close_timeout=WRITE_TIMEOUT,
                retry_policy=WRITE_RETRY,
                summary="mark the execution failed (its error transition could not be written)",
            )

    def _status(self, status: str, error: str | None = None) -> None:
        if self.on_status is not None:
            self.on_status(status, error)

    async def _drain(
        self, status: str | None, output: Any, error: str | None, once: bool = False, background: bool = False
    ) -> None:
        # A background write (`once`) takes one batch; transitions added meanwhile wait for the next write,
        # so a final status is only ever written by flush() with the final transition in its batch.
        async with self._lock:
            await self._no_call_writing.wait()
            while self.pending:
                batch, self.pending, self.pending_bytes = self.pending, [], 0
                current = status or ("awaiting_input" if self.open_waits else "running")
                await self._write(batch, current, output, error, background)
                if once:
                    return

    async def _write(
        self,
        batch: list[TransitionRow],
        status: str,
        output: Any,
        error: str | None,
        background: bool = False,
    ) -> None:
        """One batch, in one activity: local when the workflow waits for it anyway, regular in the
        background, so that it runs beside the call that follows instead of holding its workflow task.
        Either way an attempt lost with its worker is retried within seconds (contracts/liveness.py): a
        local one with the workflow task, a regular one when its heartbeat stops."""
        arguments = TransitionBatch(self.execution_id, self.developer_id, batch, status, output, error)
        self._status(status, error)
        try:
            if background:
                await workflow.execute_activity(
                    WRITE_TRANSITIONS,
                    arguments,
                    start_to_close_timeout=WRITE_TIMEOUT,
                    heartbeat_timeout=HEARTBEAT_TIMEOUT,
                    retry_policy=WRITE_RETRY,
                    summary=f"{batch_summary(batch)} · {status}",
                    task_queue=self.write_queue,
                )
            else:
                await workflow.execute_local_activity(
                    WRITE_TRANSITIONS,
                    arguments,
                    start_to_close_timeout=WRITE_TIMEOUT,
                    retry_policy=WRITE_RETRY,
                    summary=f"{batch_summary(batch)} · {status}",
                )
        except asyncio.CancelledError:
            # Cancelled mid-write: keep the batch so the final flush writes it (writes are idempotent).
            self.pending = batch + self.pending
            raise


def batch_summary(batch: list[TransitionRow]) -> str:
    """What a batch records, for the Temporal UI's timeline: `transitions 4-6, up to wait at main[2]`."""
    first, last = batch[0], batch[-1]
    span = f"transition {first['seq']}" if len(batch) == 1 else f"transitions {first['seq']}-{last['seq']}"
    current, label = last["current"], last["step_label"]
    at = f"{current['workflow']}[{current['step']}]" + (f' "{label}"' if label else "")
    return f"{span}, up to {last['type']} at {at}"


@final
@dataclass
class Logged:
    """A log step's outcome: its input passes through, its rendered text goes in the transition's metadata."""

    output: Any
    text: JsonValue

    def metadata(self) -> JsonObject:
        return {LOG_NOTE: self.text}
