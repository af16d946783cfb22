"""`mint developer` (create, add-key, revoke-key) and `mint docs reembed`: run against the database
directly, not through the API."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import click

from process.cli_settings import settings_from_env
from process.local_stack import embedded_postgres


def with_store(data_dir: Path, work: Any) -> Any:
    """Run `work(store)` against MINT_DATABASE_URL, or the embedded Postgres under data_dir."""
    from infra.store.db import connect_pool, migrate
    from infra.store.tables import Store
    from process import local_services

    settings = settings_from_env()
    url = settings.database_url or local_services.postgres_url(embedded_postgres(data_dir.resolve()))

    async def run() -> Any:
        pool = await connect_pool(url, max_size=2)
        try:
            await migrate(pool)
            return await work(Store(pool))
        finally:
            await pool.close()

    return asyncio.run(run())


DATA_DIR = click.option(
    "--data-dir", default="./.mint", show_default=True, type=click.Path(file_okay=False, path_type=Path)
)


@click.group()
def developer() -> None:
    """Manage developers (tenants)."""


@developer.command("create")
@click.argument("name")
@DATA_DIR
def developer_create(name: str, data_dir: Path) -> None:
    """Create a developer and print a new API key for it (shown only once)."""
    developer_id, key = with_store(data_dir, lambda store: store.create_developer(name))
    click.echo(f"developer {name} ({developer_id})")
    click.echo(f"API key: {key}")


@developer.command("add-key")
@click.argument("developer_id")
@DATA_DIR
def developer_add_key(developer_id: str, data_dir: Path) -> None:
    """Print a new API key for an existing developer (its other keys keep working)."""
    key = with_store(data_dir, lambda store: store.add_key(developer_id))
    click.echo(f"API key: {key}")


@developer.command("revoke-key")
@click.argument("key")
@DATA_DIR
def developer_revoke_key(key: str, data_dir: Path) -> None:
    """Revoke an API key: requests with it answer 401 from now on."""
    if not with_store(data_dir, lambda store: store.revoke_key(key)):
        raise click.ClickException("no live API key matches")
    click.echo("revoked")


@click.group()
def docs() -> None:
    """Manage docs."""


@docs.command("reembed")
@DATA_DIR
def docs_reembed(data_dir: Path) -> None:
    """Embed again every doc whose embeddings come from another model (or size) than its developer's
    (PUT /developer/settings), or MINT_EMBEDDING_MODEL's for a developer who chose none."""
    from infra.store.docs import DocStore
    from process.stack import embedders_for

    settings = settings_from_env()

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

    click.echo(f"re-embedded {with_store(data_dir, reembed)} docs")
