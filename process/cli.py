"""The `mint` command: up, api, worker, run, developer create."""

from __future__ import annotations

import asyncio
import dataclasses
import signal
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from infra.settings import Settings
from process.admin_cli import developer, docs
from process.cli_settings import external_settings
from process.executions_cli import COMMANDS as EXECUTION_COMMANDS
from process.exit_codes import MintGroup
from process.local_stack import (
    announce,
    claim_data_dir,
    embedded_postgres,
    local_settings,
    stored_key,
    up_settings,
    worker_process,
)
from process.mcp_bridge import mcp
from process.schedules_cli import schedule

if TYPE_CHECKING:
    from process.stack import StackOptions
from process.stack_file import DATA_DIR_OPTION, URL_OPTION
from process.worker_options import WORKER_SIZING, sized


@click.group(cls=MintGroup)
def cli() -> None:
    """Mint: a durable workflow engine for AI agents."""


@cli.command()
@click.option(
    "--data-dir",
    default="./.mint",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Where the embedded Postgres, the Temporal state and the API key live.",
)
@click.option("--temporal-port", default=7233, show_default=True, help="The Temporal dev server's gRPC port.")
@click.option("--ui-port", default=8233, show_default=True, help="The Temporal web UI's port.")
@click.option(
    "--api-port",
    default=None,
    type=int,
    help="The Mint API's port (default: MINT_API_PORT, else 8080).",
)
def up(data_dir: Path, temporal_port: int, ui_port: int, api_port: int | None) -> None:
    """Start Postgres, Temporal (with its UI), a worker and the API on this machine. Ctrl-C stops all."""
    data_dir = data_dir.resolve()
    settings = up_settings(api_port)
    claim_data_dir(data_dir, settings, temporal_port, ui_port)  # before the slow imports

    from process import local_services
    from process.stack import StackOptions
    from process.stack_file import forget_stack, record_stack
    from process.ui_gateway import UiGateway

    api_url = f"http://{settings.api_host}:{settings.api_port}"
    record_stack(data_dir, api_url)
    key = settings.api_key or stored_key(data_dir)
    token_file = None if settings.codec_token else data_dir / "codec_token"
    settings, worker_metrics = local_settings(settings, data_dir, ui_port)
    postgres = guard = temporal = worker = gateway = None
    try:
        database_url = settings.database_url
        if not database_url:
            postgres = embedded_postgres(data_dir)
            # Postgres runs detached from us (pg_ctl starts it): the guard stops it if we are killed.
            guard = local_services.guard_postgres(postgres)
            database_url = local_services.postgres_url(postgres)
        if not settings.temporal_address:
            # The UI's port, with the codec server on it.
            gateway = UiGateway(ui_port, api_url, settings.max_body_bytes).start()
            temporal = local_services.start_temporal(
                data_dir,
                temporal_port,
                gateway.upstream_port,
                codec_endpoint=gateway.codec_endpoint,
                die_with_us=True,
            )
        address = settings.temporal_address or f"127.0.0.1:{temporal_port}"
        announce(api_url, ui_port if temporal else None, key, token_file)
        worker = worker_process(
            data_dir,
            settings,
            {**worker_metrics, "MINT_DATABASE_URL": database_url, "TEMPORAL_ADDRESS": address},
            _stop_deadline(settings),
        )
        worker.start()
        _serve(settings, StackOptions(database_url, address, run_worker=False, default_key=key), worker.watch)
    except RuntimeError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        if worker:
            worker.stop()
        if temporal:
            local_services.stop_process(temporal)
        if gateway:
            gateway.stop()
        if guard:
            local_services.stop_guard(guard)
        if postgres:
            postgres.cleanup()
        forget_stack()
        click.echo("Mint stopped.")


@cli.command()
def api() -> None:
    """Run only the API (needs MINT_DATABASE_URL and TEMPORAL_ADDRESS)."""
    from process.stack import StackOptions

    settings = external_settings()
    assert settings.database_url and settings.temporal_address
    _serve(
        settings,
        StackOptions(
            settings.database_url,
            settings.temporal_address,
            run_worker=False,
            default_key=settings.api_key,
        ),
    )


@cli.command()
@click.option(
    "--data-dir",
    default=None,
    type=click.Path(file_okay=False, path_type=Path),
    help="Use the encryption key `mint up` keeps there when MINT_ENCRYPTION_KEY is not set.",
)
@WORKER_SIZING
def worker(data_dir: Path | None, **sizing: Any) -> None:
    """Run only a worker (needs MINT_DATABASE_URL and TEMPORAL_ADDRESS)."""
    from process.worker_process import die_with_parent

    die_with_parent()
    settings = sized(external_settings(), sizing)  # checked before the slow imports below
    from process.stack import StackOptions

    url, address = settings.database_url, settings.temporal_address
    assert url and address
    if data_dir and not settings.encryption_keys and (data_dir / "encryption_key").exists():
        key = (data_dir / "encryption_key").read_text().strip()
        settings = dataclasses.replace(settings, encryption_keys=(key,))
    _serve(_worker_only(settings), StackOptions(url, address, run_api=False))


def _worker_only(settings: Settings) -> Settings:
    """A worker's settings without what only the API uses: the API key and the codec token are dropped (and
    said to be needless), but for the codec token's old second role, guarding the metrics port when no
    MINT_METRICS_TOKEN is set (a deployment from before that variable keeps its metrics closed)."""
    needless = [
        name
        for name, value in (("MINT_API_KEY", settings.api_key), ("MINT_CODEC_TOKEN", settings.codec_token))
        if value
    ]
    if needless:
        click.echo(
            f"warning: a worker does not use {' or '.join(needless)}: leave it out of the worker's "
            "environment (its metrics port asks for MINT_METRICS_TOKEN)",
            err=True,
        )
    return dataclasses.replace(
        settings, api_key=None, codec_token=None, metrics_token=settings.metrics_port_token()
    )


@cli.command("run")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--input", "input_json", default=None, help="The execution input, as JSON (or YAML).")
@click.option(
    "--agent", "agent_name", default="mint-run", show_default=True, help="The agent to own the task."
)
@URL_OPTION
@DATA_DIR_OPTION
def run_file(
    file: Path, input_json: str | None, agent_name: str, url: str | None, data_dir: Path | None
) -> None:
    """Create or update the task in FILE, run it, and show its progress."""
    from process.runner import run_task_file
    from process.stack_file import find_stack

    raise SystemExit(run_task_file(find_stack(data_dir, url), file, input_json, agent_name))


def _stop_deadline(settings: Settings) -> float:
    """Stopping never takes longer than this: work in flight gets its grace, then it is cut off."""
    return 4 * settings.shutdown_grace_seconds + 10


def _serve(
    settings: Settings, options: StackOptions, beside: Callable[[], Coroutine[Any, Any, None]] | None = None
) -> None:
    """Run the stack (and `beside()`, if given) until SIGINT or SIGTERM. Stopping is bounded: the stack
    gives work in flight `shutdown_grace_seconds`, and past a deadline (or at a second signal) it is
    cancelled outright."""
    from infra.models.embeddings import load_soon
    from infra.telemetry.logs import setup_logging
    from process.stack import CannotStart, run_stack

    setup_logging(settings.log_format, settings.log_level)
    load_soon(settings.embedding_model)  # while the stack connects (run_stack waits for it before serving)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        runner = asyncio.current_task()
        assert runner is not None

        def on_signal() -> None:
            if stop.is_set():
                runner.cancel()  # a second Ctrl-C: stop now
                return
            stop.set()
            loop.call_later(_stop_deadline(settings), runner.cancel)

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, on_signal)
        side = asyncio.create_task(beside()) if beside else None
        try:
            await run_stack(settings, options, stop=stop)
        finally:
            if side:
                side.cancel()

    try:
        asyncio.run(main())
    except asyncio.CancelledError:
        click.echo("Stopped without waiting for the work in flight (it resumes at the next start).")
    except CannotStart as exc:
        raise click.ClickException(str(exc)) from None


# mint developer, docs, schedule and mcp; the execution commands (ls, status, watch, logs, resume, cancel, restart)
for _command in (developer, docs, schedule, mcp, *EXECUTION_COMMANDS):
    cli.add_command(_command)


def main(argv: list[str] | None = None) -> None:
    cli.main(args=argv, prog_name="mint")


if __name__ == "__main__":
    main()
