"""The `mint` command: up, api, worker, run, developer create."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import secrets
import signal
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import click

from infra.settings import Settings
from process.executions_cli import COMMANDS as EXECUTION_COMMANDS
from process.stack_file import DATA_DIR_OPTION, URL_OPTION
from process.worker_options import WORKER_SIZING, sized


@click.group()
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
    from process.data_dir_lock import hold_data_dir
    from process.data_dir_mode import make_owner_only

    data_dir = data_dir.resolve()
    make_owner_only(data_dir)
    # One `mint up` per data dir (held until this process exits), said at once, before the slow imports;
    # then anything a crashed one left running here is ours to stop.
    hold_data_dir(data_dir)

    from process import local_services
    from process.leftovers import clear_leftovers
    from process.stack import StackOptions
    from process.stack_file import forget_stack, record_stack

    settings = _up_settings(api_port)
    for line in clear_leftovers(data_dir):
        click.echo(line)
    api_url = f"http://{settings.api_host}:{settings.api_port}"
    record_stack(data_dir, api_url)
    key = settings.api_key or _stored_key(data_dir)
    token_file = None if settings.codec_token else data_dir / "codec_token"
    settings, worker_metrics = _local_settings(settings, data_dir, ui_port)
    postgres = guard = temporal = worker = None
    try:
        if not settings.database_url:
            postgres = _embedded_postgres(data_dir)
            # Postgres runs detached from us (pg_ctl starts it): the guard stops it if we are killed.
            guard = local_services.guard_postgres(postgres)
        database_url = settings.database_url or local_services.postgres_url(postgres)
        temporal = (
            None
            if settings.temporal_address
            else local_services.start_temporal(data_dir, temporal_port, ui_port, die_with_us=True)
        )
        address = settings.temporal_address or f"127.0.0.1:{temporal_port}"
        _announce(api_url, ui_port if temporal else None, key, token_file)
        worker = _worker_process(
            data_dir,
            settings,
            {**worker_metrics, "MINT_DATABASE_URL": database_url, "TEMPORAL_ADDRESS": address},
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
        if guard:
            local_services.stop_guard(guard)
        if postgres:
            postgres.cleanup()
        forget_stack()
        click.echo("Mint stopped.")


def _settings_from_env() -> Settings:
    """The environment's settings; a bad variable stops the command with a line naming it."""
    try:
        return Settings.from_env()
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None


def _up_settings(api_port: int | None) -> Settings:
    """The environment's settings, with `--api-port`, and logging set up by them."""
    from infra.telemetry.logs import setup_logging

    settings = _settings_from_env()
    setup_logging(settings.log_format, settings.log_level)
    return dataclasses.replace(settings, api_port=api_port) if api_port is not None else settings


def _announce(api_url: str, ui_port: int | None, key: str, token_file: Path | None) -> None:
    """What `mint up` serves, and how to reach it."""
    click.echo(f"Mint API      {api_url}")
    if ui_port is not None:
        click.echo(f"Temporal UI   http://127.0.0.1:{ui_port}")
    click.echo(f"API key       {key}")
    click.echo(_codec_help(api_url, token_file))
    click.echo("Ctrl-C stops everything.", nl=True)


def _local_settings(settings: Settings, data_dir: Path, ui_port: int) -> tuple[Settings, dict[str, str]]:
    """`mint up`'s settings, and the environment its worker's metrics need.

    Secrets and Temporal payloads are encrypted under `mint up` as in production, with a key kept in the
    data dir unless MINT_ENCRYPTION_KEY names one; the operator decodes them through Mint's codec server,
    whose token is kept there too. The dev UI is not told the codec endpoint: it could not send the
    operator's session with it (the dev server has no setting for that), so the operator sets it in the
    browser. The worker serves its metrics on a loopback port of its own, asking for a token of their own
    (MINT_METRICS_TOKEN, else a new one each run) that the API's /metrics sends when it includes them."""
    from infra.telemetry.metrics import free_loopback_port

    ui_origins = (f"http://127.0.0.1:{ui_port}", f"http://localhost:{ui_port}")
    metrics_port = free_loopback_port()
    metrics_token = settings.metrics_token or secrets.token_urlsafe(32)
    local = dataclasses.replace(
        settings,
        metrics_include=(("worker", f"http://127.0.0.1:{metrics_port}/metrics"),),
        metrics_token=metrics_token,
        encryption_keys=settings.encryption_keys or (_stored_token(data_dir, "encryption_key"),),
        codec_token=settings.codec_token or _stored_token(data_dir, "codec_token"),
        codec_origins=settings.codec_origins or ui_origins,
    )
    worker_metrics = {
        "MINT_METRICS_PORT": str(metrics_port),
        "MINT_METRICS_HOST": "127.0.0.1",
        "MINT_METRICS_TOKEN": metrics_token,
    }
    return local, worker_metrics


def _worker_process(data_dir: Path, settings: Settings, env: dict[str, str]):
    """`mint up`'s worker, in a process of its own (see process/worker_process.py), with `env` (the
    services' addresses, its metrics' port and token) and the encryption key: never the API key or the codec
    token, which only the API uses."""
    from process.worker_process import WorkerProcess

    env = {**env, "MINT_ENCRYPTION_KEY": ",".join(settings.encryption_keys)}
    return WorkerProcess(data_dir, env, stop_within=_stop_deadline(settings))


@cli.command()
def api() -> None:
    """Run only the API (needs MINT_DATABASE_URL and TEMPORAL_ADDRESS)."""
    from process.stack import StackOptions

    settings = _external_settings()
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
    settings = sized(_external_settings(), sizing)  # checked before the slow imports below
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


def _with_store(data_dir: Path, work: Any) -> Any:
    """Run `work(store)` against MINT_DATABASE_URL, or the embedded Postgres under data_dir."""
    from infra.store.db import connect_pool, migrate
    from infra.store.tables import Store
    from process import local_services

    settings = _settings_from_env()
    url = settings.database_url or local_services.postgres_url(_embedded_postgres(data_dir.resolve()))

    async def run() -> Any:
        pool = await connect_pool(url, max_size=2)
        try:
            await migrate(pool)
            return await work(Store(pool))
        finally:
            await pool.close()

    return asyncio.run(run())


def _embedded_postgres(data_dir: Path):
    """The embedded Postgres under data_dir (started if it is not running), the data dir left owner-only."""
    from process import local_services
    from process.data_dir_mode import let_postgres_pass, make_owner_only

    make_owner_only(data_dir)
    server = local_services.start_postgres(data_dir)
    let_postgres_pass(data_dir, server)
    return server


DATA_DIR = click.option(
    "--data-dir", default="./.mint", show_default=True, type=click.Path(file_okay=False, path_type=Path)
)


@cli.group()
def developer() -> None:
    """Manage developers (tenants)."""


@developer.command("create")
@click.argument("name")
@DATA_DIR
def developer_create(name: str, data_dir: Path) -> None:
    """Create a developer and print a new API key for it (shown only once)."""
    developer_id, key = _with_store(data_dir, lambda store: store.create_developer(name))
    click.echo(f"developer {name} ({developer_id})")
    click.echo(f"API key: {key}")


@developer.command("add-key")
@click.argument("developer_id")
@DATA_DIR
def developer_add_key(developer_id: str, data_dir: Path) -> None:
    """Print a new API key for an existing developer (its other keys keep working)."""
    key = _with_store(data_dir, lambda store: store.add_key(developer_id))
    click.echo(f"API key: {key}")


@developer.command("revoke-key")
@click.argument("key")
@DATA_DIR
def developer_revoke_key(key: str, data_dir: Path) -> None:
    """Revoke an API key: requests with it answer 401 from now on."""
    if not _with_store(data_dir, lambda store: store.revoke_key(key)):
        raise click.ClickException("no live API key matches")
    click.echo("revoked")


@cli.group()
def docs() -> None:
    """Manage docs."""


@docs.command("reembed")
@DATA_DIR
def docs_reembed(data_dir: Path) -> None:
    """Embed again every doc whose embeddings come from another model (or size) than its developer's
    (PUT /developer/settings), or MINT_EMBEDDING_MODEL's for a developer who chose none."""
    from infra.store.docs import DocStore
    from process.stack import embedders_for

    settings = _settings_from_env()

    async def reembed(store: Any) -> int:
        docs, embedders, done = DocStore(store.pool), embedders_for(store.pool, settings), 0
        for developer in await docs.developers_with_docs():
            embedder = await embedders.of(developer)
            stale = (developer, embedder.model, embedder.dimensions)
            if not (total := await docs.count_stale(*stale)):
                continue
            click.echo(f"{total} docs of developer {developer} to embed with {embedder.model}")
            while batch := await docs.stale(*stale, 50):
                for doc_id in batch:
                    instruction, chunks = await docs.all_chunks(developer, doc_id)
                    vectors = await embedder.embed([text for _, text in chunks], instruction)
                    indexed = list(zip([i for i, _ in chunks], vectors, strict=True))
                    await docs.save_embeddings(developer, doc_id, embedder.model, indexed)
                done += len(batch)
                click.echo(f"  {done} done")
        return done

    click.echo(f"re-embedded {_with_store(data_dir, reembed)} docs")


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


def _codec_help(api_url: str, token_file: Path | None) -> str:
    """How the operator sees decoded payloads: the codec server's URL carries no secret; the token (in a
    file or MINT_CODEC_TOKEN, never printed) signs a browser in, or goes with the CLI's --codec-auth."""
    source, shell = (
        (str(token_file), f"$(cat {token_file})") if token_file else ("MINT_CODEC_TOKEN", "$MINT_CODEC_TOKEN")
    )
    return (
        f"Codec server  {api_url}/codec (decodes payloads for the operator; token in {source})\n"
        f"              Temporal UI: sign in at {api_url}/codec/sign-in, then in the UI's codec server\n"
        f'              settings use {api_url}/codec with "Include cross-origin credentials" on\n'
        f"              CLI: temporal workflow show -w ID --codec-endpoint {api_url}/codec "
        f'--codec-auth "Bearer {shell}"'
    )


def _external_settings() -> Settings:
    settings = _settings_from_env()
    missing = [
        n
        for n, v in (
            ("MINT_DATABASE_URL", settings.database_url),
            ("TEMPORAL_ADDRESS", settings.temporal_address),
        )
        if not v
    ]
    if missing:
        raise click.ClickException(
            f"set {' and '.join(missing)} (or use `mint up` to run everything locally)"
        )
    from infra.temporal.tls import TemporalTls, tls_config

    try:  # certificates are read now: a bad one stops the start with its variable's name
        tls_config(TemporalTls.of(settings), settings.temporal_api_key)
    except ValueError as exc:
        raise click.ClickException(f"Temporal TLS: {exc}") from None
    return settings


def _stored_key(data_dir: Path) -> str:
    """The API key `mint up` generated for this data dir (kept so that restarts keep working clients)."""
    return _stored_token(data_dir, "api_key", prefix="mint_")


def _stored_token(data_dir: Path, name: str, prefix: str = "") -> str:
    """A random token kept in data_dir/name (owner-only), made on first use."""
    path = data_dir / name
    if path.exists():
        return path.read_text().strip()
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    token = prefix + secrets.token_urlsafe(32)
    # Created owner-only from the start: never readable by others, even for a moment.
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as file:
        file.write(token + "\n")
    return token


def _stop_deadline(settings: Settings) -> float:
    """Stopping never takes longer than this: work in flight gets its grace, then it is cut off."""
    return 4 * settings.shutdown_grace_seconds + 10


def _serve(
    settings: Settings, options, beside: Callable[[], Coroutine[Any, Any, None]] | None = None
) -> None:
    """Run the stack (and `beside()`, if given) until SIGINT or SIGTERM. Stopping is bounded: the stack
    gives work in flight `shutdown_grace_seconds`, and past a deadline (or at a second signal) it is
    cancelled outright."""
    from infra.telemetry.logs import setup_logging
    from process.stack import CannotStart, run_stack

    setup_logging(settings.log_format, settings.log_level)

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


for _command in EXECUTION_COMMANDS:  # mint ls, status, watch, logs, resume, cancel
    cli.add_command(_command)


def main(argv: list[str] | None = None) -> None:
    cli.main(args=argv, prog_name="mint")


if __name__ == "__main__":
    main()
