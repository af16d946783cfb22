"""One way to reach Temporal, used by the API, the worker, the CLI and the tests."""

from __future__ import annotations

from temporalio.client import Client

from mint.settings import Settings


async def connect_temporal(address: str, namespace: str = "default", api_key: str | None = None) -> Client:
    """Connect with Mint's data converter (the SDK default: JSON, dataclasses included)."""
    return await Client.connect(address, namespace=namespace, api_key=api_key, tls=bool(api_key))


async def connect_from_settings(settings: Settings, address: str | None = None) -> Client:
    return await connect_temporal(
        address or settings.temporal_address or "127.0.0.1:7233",
        settings.temporal_namespace,
        settings.temporal_api_key,
    )
