"""How fast a lost worker is noticed, in one place: the timeouts workflows give activities, how often
activities heartbeat, and the worker options that go with them.

Temporal learns that a worker died only when something it was owed does not arrive: a heartbeat (within an
activity's heartbeat timeout), an attempt's end (within its start-to-close timeout), or a workflow task's
answer (within the workflow task timeout). Until then the execution waits, so every internal activity here
either heartbeats or is short. Changing these values is replay-safe: Temporal's determinism check compares
the commands a workflow emits, not their timeouts.
"""

from __future__ import annotations

from datetime import timedelta

# An activity that calls out (a model, an HTTP tool, MCP, an embedding) or may run long heartbeats every
# HEARTBEAT_EVERY seconds while it runs; Temporal retries it elsewhere when none arrived for HEARTBEAT_TIMEOUT.
HEARTBEAT_EVERY = 1.0
HEARTBEAT_TIMEOUT = timedelta(seconds=5)
# The SDK holds back heartbeats to at most one per 0.8 x the heartbeat timeout (4 s here), which would leave
# one second of margin; workers send them at most this far apart instead (process/worker.py), leaving three.
HEARTBEAT_THROTTLE = timedelta(seconds=2)
# A transition write (and the other internal writes) is one short transaction: an attempt lost with its
# worker is retried after this long at most. Writes are idempotent (activities/transitions.py), so a retry
# of an attempt that did commit changes nothing. Writes that run as regular activities heartbeat too, so a
# lost one is noticed within HEARTBEAT_TIMEOUT.
WRITE_TIMEOUT = timedelta(seconds=10)
# A workflow task (and the local activities that run in it: calls in the worker, transition writes the
# workflow waits for) lost with its worker is retried after this long (Temporal's default is 10 s). A task
# that legitimately runs longer is kept alive by the SDK's workflow task heartbeat; the interpreter yields
# long before (a workflow task busy for 2 s counts as deadlocked).
WORKFLOW_TASK_TIMEOUT = timedelta(seconds=5)
# A workflow's next task goes first to the worker that ran its last one (its sticky queue, which keeps the
# workflow in memory); if that worker does not take it within this long (it died), it goes to any worker,
# which replays the history. Temporal's default is 10 s.
STICKY_TIMEOUT = timedelta(seconds=3)
