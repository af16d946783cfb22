"""One `mint up` per data dir: two would share one Postgres and one Temporal SQLite file (SQLITE_BUSY, "Shard
is owned by ..."), whatever ports each was given.

The lock is an flock on data_dir/up.lock, held for the life of `mint up`. The kernel drops it when the process
dies however it dies (kill -9 included), so a crash never leaves a stale lock behind. The descriptor is not
inherited by children (Python opens files close-on-exec), so a leftover child cannot keep it either.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

import click

LOCK_FILE = "up.lock"
# The holder writes stack.json just after it takes the lock: how long to wait to name it.
HOLDER_RECORD_WAIT_SECONDS = 2.0

_held: dict[Path, int] = {}  # data dir -> the open descriptor that holds its lock, for this process's life


def hold_data_dir(data_dir: Path) -> None:
    """Take data_dir's lock until this process exits; if another `mint up` holds it, a ClickException
    naming that process and the API it serves."""
    if data_dir in _held:
        return
    descriptor = os.open(data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        raise click.ClickException(_held_by_another(data_dir)) from None
    _held[data_dir] = descriptor


def _held_by_another(data_dir: Path) -> str:
    from process.stack_file import running_stack

    deadline = time.monotonic() + HOLDER_RECORD_WAIT_SECONDS
    while (holder := running_stack(data_dir)) is None and time.monotonic() < deadline:
        time.sleep(0.1)
    if holder is None:
        return f"another `mint up` is already running on {data_dir}: stop it first, or use another --data-dir"
    return (
        f"another `mint up` (pid {holder['pid']}) is already running on {data_dir}, serving "
        f"{holder['api_url']}: use it, stop it first, or use another --data-dir"
    )
