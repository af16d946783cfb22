"""A real Mint stack (API + worker) in a background thread, as `mint up` runs it, for tests and bench."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import threading
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from infra.settings import Settings
from process.stack import StackOptions, run_stack
from tests.ports import free_port

TEST_ENCRYPTION_KEY = "test-encryption-key-0123456789abcdef"


class BackgroundStack:
    """Runs run_stack() on its own event loop in a thread; `url` is the API's base URL."""

    def __init__(
        self,
        database_url: str,
        temporal_address: str,
        *,
        run_worker: bool = True,
        run_api: bool = True,
        **settings: Any,
    ):
        """`settings` override Settings fields (task_queue, max_history_events, reconcile_interval, ...)."""
        settings.setdefault("egress_allow", ("127.0.0.1", "localhost"))
        # Secrets work, and every payload the suite sends through Temporal is encrypted, as in production.
        settings.setdefault("encryption_keys", (TEST_ENCRYPTION_KEY,))
        # Tests poll fast and long; the rate limit has its own test (tests/test_limits.py).
        settings.setdefault("rate_limit_per_minute", 0)
        self.settings = replace(Settings(), api_port=free_port(), **settings)
        self.options = StackOptions(database_url, temporal_address, run_api=run_api, run_worker=run_worker)
        self.url = f"http://127.0.0.1:{self.settings.api_port}"
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            started = asyncio.Event()
            runner = asyncio.create_task(run_stack(self.settings, self.options, started, self._stop))
            await asyncio.wait(
                [runner, asyncio.create_task(started.wait())], return_when=asyncio.FIRST_COMPLETED
            )
            self._started.set()
            await runner

        try:
            asyncio.run(main())
        except BaseException as exc:  # reported to the test thread
            self._error = exc
            self._started.set()

    def start(self) -> BackgroundStack:
        self._thread.start()
        self._started.wait(120)
        if self._error:
            raise RuntimeError("the Mint stack failed to start") from self._error
        return self

    async def __aenter__(self) -> BackgroundStack:
        """`async with BackgroundStack(...) as stack:` starts it (off the event loop) and stops it after."""
        return await asyncio.to_thread(self.start)

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.stop)

    def stop(self) -> None:
        if self._loop and self._stop:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(60)


def spawn_worker(
    database_url: str,
    temporal_address: str,
    task_queue: str,
    *args: str,
    log: Path | None = None,
    **env: str,
) -> subprocess.Popen:
    """`mint worker` in a process of its own (so that a test can kill it), allowed to call loopback; `args`
    are its flags, `env` more variables, `log` a file for what it prints (else it is dropped)."""
    env = {
        **os.environ,
        "MINT_DATABASE_URL": database_url,
        "TEMPORAL_ADDRESS": temporal_address,
        "MINT_TASK_QUEUE": task_queue,
        "MINT_EGRESS_ALLOW": "127.0.0.1,localhost",
        "MINT_ENCRYPTION_KEY": TEST_ENCRYPTION_KEY,  # the key the test stacks encrypt payloads with
        **env,
    }
    out = log.open("ab") if log is not None else subprocess.DEVNULL
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "process.cli", "worker", *args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT if log is not None else subprocess.DEVNULL,
        )
    finally:
        if log is not None:
            out.close()  # type: ignore[union-attr]


class MintUp:
    """`mint up` as a user runs it, in a process of its own, on free ports and its own data dir.

    `key`: the MINT_API_KEY it is given; None gives none, so that it makes one and keeps it in the data dir
    (then `key` is read from there once it has started). Its per-user pointer to the running stack goes to
    an XDG_STATE_HOME of its own beside the data dir, never the user's."""

    def __init__(self, data_dir: Path, key: str | None = "mint_test_key_for_up", **env: str):
        self.data_dir = data_dir
        self.given_key = key
        self.key = key or ""
        self.api_port, self.temporal_port, self.ui_port = free_port(), free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.api_port}"
        ignored = ("MINT_DATABASE_URL", "TEMPORAL_ADDRESS", "MINT_API_KEY", "MINT_API_URL", "MINT_API_PORT")
        inherited = {k: v for k, v in os.environ.items() if k not in ignored}
        state = str(data_dir.with_name(data_dir.name + ".state"))
        self.env = {**inherited, "XDG_STATE_HOME": state, **({"MINT_API_KEY": key} if key else {}), **env}
        self.process: subprocess.Popen | None = None
        # Everything it and its worker print goes to a file, never to a pipe: a pipe nobody reads fills up
        # (64 KB of warnings under load), and then every write blocks, stalling the worker mid-flight.
        self.log_path = data_dir.with_name(data_dir.name + ".log")

    def again(self) -> MintUp:
        """Another `mint up` on the same data dir, ports and environment (not started)."""
        other = MintUp.__new__(MintUp)
        other.__dict__.update(self.__dict__, process=None)
        return other

    def command(self) -> list[str]:
        """The `mint up` command line, with this instance's data dir and ports."""
        return [
            *(sys.executable, "-m", "process.cli", "up", "--data-dir", str(self.data_dir)),
            *("--api-port", str(self.api_port)),
            *("--temporal-port", str(self.temporal_port), "--ui-port", str(self.ui_port)),
        ]

    def output(self) -> str:
        """Everything `mint up` (and its worker) printed so far."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def start(self, healthy_within: float = 120) -> MintUp:
        import time

        import httpx

        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                self.command(), env=self.env, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + healthy_within
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"mint up exited: {self.output()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    if self.given_key is None:
                        self.key = (self.data_dir / "api_key").read_text().strip()
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise AssertionError("mint up did not become healthy")

    def stop(self, signal_number: int = 2, within: float = 60) -> tuple[int, str]:
        """Send SIGINT (or another signal); the exit code and everything it printed. Fails if it does not
        exit `within` seconds."""
        assert self.process is not None
        self.process.send_signal(signal_number)
        self.process.wait(timeout=within)
        return self.process.returncode, self.output()

    def leftovers(self) -> str:
        """Processes still running from this data dir (Postgres, Temporal), one `PID COMMAND LINE` each:
        empty once all is stopped."""
        found = subprocess.run(["pgrep", "-af", str(self.data_dir)], capture_output=True, text=True)
        return found.stdout

    def kill(self) -> None:
        """Stop it and everything it started, whatever state it is in (for a test's cleanup)."""
        if self.process is not None:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
        subprocess.run(["pkill", "-9", "-f", str(self.data_dir)], check=False)


def stop_process(process: subprocess.Popen | None) -> None:
    if process is not None and process.poll() is None:
        process.terminate()
        process.wait(10)


class LocalMint:
    """Temporary Postgres, Temporal dev server and Mint stacks, for benchmarks and scripts (not pytest)."""

    def __init__(self) -> None:
        self.database_url = ""
        self.key = ""
        self.env: Any = None
        self.pool: Any = None
        self._postgres: Any = None
        self._stacks: list[BackgroundStack] = []

    async def start(self) -> LocalMint:
        from temporalio.testing import WorkflowEnvironment

        from infra.store.db import connect_pool, migrate
        from infra.store.tables import Store
        from process import local_services

        self._postgres = local_services.start_postgres(Path(tempfile.mkdtemp(prefix="mint-local-")))
        self.database_url = local_services.postgres_url(self._postgres)
        self.pool = await connect_pool(self.database_url)
        await migrate(self.pool)
        _, self.key = await Store(self.pool).create_developer("local")
        self.env = await WorkflowEnvironment.start_local(
            dev_server_existing_path=local_services.find_binary("temporal"),
            dev_server_extra_args=local_services.dev_server_args(),
            ui=False,
            port=free_port(),  # not one of the kernel's: see free_port
            dev_server_startup_timeout=timedelta(seconds=60),  # the SDK's 5 s is short on a busy machine
        )
        return self

    async def stack(self, **settings: Any) -> BackgroundStack:
        """A started Mint stack (API and worker) on this Postgres and Temporal; stopped by close()."""
        address = self.env.client.service_client.config.target_host
        stack = await asyncio.to_thread(BackgroundStack(self.database_url, address, **settings).start)
        self._stacks.append(stack)
        return stack

    def api(self, stack: BackgroundStack) -> Any:
        import httpx

        return httpx.AsyncClient(
            base_url=stack.url, headers={"Authorization": f"Bearer {self.key}"}, timeout=60
        )

    async def close(self) -> None:
        for stack in self._stacks:
            await asyncio.to_thread(stack.stop)
        await self.env.shutdown()
        await self.pool.close()
        self._postgres.cleanup()
