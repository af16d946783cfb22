"""`mint up`'s worker, in a process of its own: the API never shares an event loop or a GIL with workflows.

In one process, every new workflow run's sandbox imports (which the Temporal SDK does on its event loop) and
every workflow task (holding the GIL) delayed the API's answers by up to seconds under load. As a child
process, the worker can only slow itself. `mint up` restarts it if it dies, and it dies with `mint up`.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import click

from process.lifeline import signal_when_parent_dies

RESTART_PAUSE_SECONDS = 1.0
# What only the API uses, kept out of the worker's environment (a worker gets only what it uses): the default
# developer's API key, and the operator's codec token and its browser origins. The worker's metrics port has
# a token of its own (MINT_METRICS_TOKEN), which `mint up` gives it.
API_ONLY_VARIABLES = ("MINT_API_KEY", "MINT_CODEC_TOKEN", "MINT_CODEC_ORIGINS")


def die_with_parent() -> None:
    """Called by `mint worker` when `mint up` started it (MINT_PARENT_PID): on Linux, it gets SIGTERM when
    `mint up` dies, even by SIGKILL, so no worker outlives it. (Set in the child itself: a `preexec_fn` is
    unsafe in a parent that runs threads.)"""
    parent = os.environ.get("MINT_PARENT_PID")
    if parent and not signal_when_parent_dies(int(parent)):
        raise SystemExit(0)  # `mint up` died before the request took effect


def worker_environment(env: dict[str, str]) -> dict[str, str]:
    """This process's environment for the worker, without API_ONLY_VARIABLES, and with `env`."""
    inherited = {k: v for k, v in os.environ.items() if k not in API_ONLY_VARIABLES}
    return {**inherited, **env, "MINT_PARENT_PID": str(os.getpid())}


class WorkerProcess:
    """`mint worker` for `mint up`'s data dir, configured by `env` (database, Temporal, encryption key, its
    metrics' port and token) over this process's environment, less what only the API uses."""

    def __init__(self, data_dir: Path, env: dict[str, str], stop_within: float):
        self.command = [sys.executable, "-m", "process.cli", "worker", "--data-dir", str(data_dir)]
        self.env = worker_environment(env)
        self.stop_within = stop_within
        self.process: subprocess.Popen[bytes] | None = None
        self.stopping = False

    def start(self) -> None:
        # Its own session: a Ctrl-C in the terminal reaches only `mint up`, which stops the API first and
        # then this worker, in order.
        self.process = subprocess.Popen(self.command, env=self.env, start_new_session=True)

    async def watch(self) -> None:
        """Restart the worker whenever it exits before `stop()`."""
        while True:
            await asyncio.sleep(RESTART_PAUSE_SECONDS)
            if self.process is None or self.stopping:
                continue
            code = self.process.poll()
            if code is not None:
                click.echo(f"the worker stopped (exit code {code}); starting it again", err=True)
                self.start()

    def stop(self) -> None:
        """SIGTERM, as `mint worker` expects; SIGKILL if it is still running after `stop_within` seconds."""
        self.stopping = True
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(self.stop_within)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
