"""Session-wide real services: an embedded Postgres, a Temporal dev server, and a Mint stack.

Each test gets its own developer (tenant), so tests never see each other's rows and need no truncation.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import pytest_asyncio
from temporalio.runtime import LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter
from temporalio.testing import WorkflowEnvironment

from infra.store.db import connect_pool, migrate
from infra.store.tables import Store
from process import local_services
from tests.model_server import Call, ModelServer, Reply
from tests.ports import free_port

if TYPE_CHECKING:  # imported where a stack starts: it brings the whole API and the model SDKs along, which
    # the fast layer (tests/unit) never needs
    from tests.stack import BackgroundStack

# The time-skipping test server does not advertise that it keeps an activity's last heartbeat details when
# it fails, so every worker polling it warns that it needs "Temporal Server 1.16.0 or newer": true of the test
# server, not of anything Mint runs on. The core worker module warns at ERROR only here; the rest of the SDK
# warns as it does by default.
_SDK_LOGS = TelemetryFilter(core_level="WARN", other_level="ERROR").formatted()
Runtime.set_default(
    Runtime(
        telemetry=TelemetryConfig(
            logging=LoggingConfig(filter=f"{_SDK_LOGS},temporalio_sdk_core::worker=ERROR")
        )
    )
)

# The SDK gives a server 5 s to start; on a loaded 2-core machine the dev server can take longer.
SERVER_STARTUP = timedelta(seconds=60)


@pytest.fixture(scope="session")
def postgres_url() -> Any:
    # The same server, with the same settings, as `mint up` starts.
    server = local_services.start_postgres(
        Path(tempfile.mkdtemp(prefix="mint-test-pg-")), cleanup_mode="delete"
    )
    yield local_services.postgres_url(server)
    server.cleanup()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def temporal_env() -> AsyncIterator[WorkflowEnvironment]:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=local_services.find_binary("temporal"),
        dev_server_extra_args=local_services.dev_server_args(),
        ui=False,
        port=free_port(),  # not one of the kernel's: see free_port
        dev_server_log_level="error",
        dev_server_startup_timeout=SERVER_STARTUP,
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
    from tests.stack import BackgroundStack

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
        test_server_existing_path=local_services.find_binary("temporal-test-server"),
        test_server_startup_timeout=SERVER_STARTUP,
    )
    yield env
    await env.shutdown()


# A scripted local model server and a Mint stack that uses it (tests/test_prompts.py, tests/test_sessions.py).
OPENAI_KEY = "sk-openai-canary-7f3a9c1e5b"
ANTHROPIC_KEY = "sk-ant-canary-2d8e4b6f0a"
MCP_SERVER = Path(__file__).parent / "mcp_server.py"


class Script:
    """The fake model's behaviour, set per test (the server lives for the whole run)."""

    def __init__(self) -> None:
        self.reply: Any = None
        self.reset()

    def reset(self) -> None:
        self.reply = lambda call: Reply(content=f"echo: {call.messages[-1]['content']}")

    def __call__(self, call: Call) -> Reply | str:
        return self.reply(call)


@pytest.fixture(scope="session")
def script() -> Script:
    return Script()


@pytest.fixture(autouse=True)
def _echo_model_again(script: Script) -> Iterator[None]:
    """Whatever a test scripted, the next test starts with the echo model."""
    yield
    script.reset()


@pytest.fixture(scope="session")
def model_server(script: Script) -> Iterator[ModelServer]:
    with ModelServer(script) as server:
        yield server


@pytest.fixture(scope="session")
def integration_fakes() -> Iterator[Any]:
    """Local fakes of the integration providers' services (tests/integration_fakes.py)."""
    from tests.integration_fakes import IntegrationFakes

    fakes = IntegrationFakes()
    yield fakes
    fakes.close()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def model_stack(
    postgres_url, temporal_env, model_server, integration_fakes
) -> AsyncIterator[BackgroundStack]:
    from tests.stack import BackgroundStack

    async with BackgroundStack(
        postgres_url,
        temporal_address(temporal_env),
        task_queue=f"models-{uuid.uuid4()}",
        openai_api_key=OPENAI_KEY,
        openai_base_url=model_server.openai_base_url,
        anthropic_api_key=ANTHROPIC_KEY,
        anthropic_base_url=model_server.anthropic_base_url,
        mcp_servers={"calc": {"command": sys.executable, "args": [str(MCP_SERVER)]}},
        # Integration tools reach local fakes of their services (the base URLs an operator may set).
        integration_base_urls=integration_fakes.base_urls,
        smtp_host="127.0.0.1",
        smtp_port=integration_fakes.smtp_port,
    ) as stack:
        yield stack


@pytest_asyncio.fixture(loop_scope="session")
async def mapi(model_stack, api_key, script, model_server) -> AsyncIterator[httpx.AsyncClient]:
    model_server.calls.clear()
    async with httpx.AsyncClient(
        base_url=model_stack.url, headers={"Authorization": f"Bearer {api_key}"}, timeout=30
    ) as client:
        yield client
