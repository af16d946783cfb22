"""The settings a `mint` command runs with, from the environment: a bad variable stops it with one line."""

from __future__ import annotations

import click

from infra.settings import Settings


def settings_from_env() -> Settings:
    """The environment's settings; a bad variable stops the command with a line naming it."""
    try:
        return Settings.from_env()
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None


def external_settings() -> Settings:
    """The environment's settings for `mint api` and `mint worker`, which need a database and Temporal given;
    Temporal's TLS certificates are read at once."""
    settings = settings_from_env()
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
