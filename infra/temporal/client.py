"""One way to reach Temporal, used by the API, the worker and the tests."""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg
from temporalio.client import Client, Interceptor
from temporalio.service import TLSConfig

from infra.settings import Settings
from infra.telemetry.temporal_sdk import temporal_runtime
from infra.temporal.claim_check import THRESHOLD_BYTES
from infra.temporal.payload_codec import data_converter
from infra.temporal.tls import TemporalTls, tls_config


async def connect_temporal(
    address: str,
    pool: asyncpg.Pool,
    namespace: str = "default",
    api_key: str | None = None,
    claim_check_bytes: int = THRESHOLD_BYTES,
    encryption_keys: tuple[str, ...] = (),
    interceptors: Sequence[Interceptor] = (),
    tls: TLSConfig | bool | None = None,
) -> Client:
    """Connect with Mint's data converter (JSON; large payloads claim-checked into Postgres; all payloads
    encrypted when keys are given). `tls` None: TLS when there is an API key (Temporal Cloud)."""
    converter = data_converter(pool, claim_check_bytes, encryption_keys)
    runtime, _ = temporal_runtime()  # the process's: its metrics go to /metrics, its logs to ours
    return await Client.connect(
        address,
        namespace=namespace,
        api_key=api_key,
        tls=bool(api_key) if tls is None else tls,
        data_converter=converter,
        runtime=runtime,
        interceptors=interceptors,  # (tracing's also act on the workers that share the client)
    )


async def connect_from_settings(
    settings: Settings,
    pool: asyncpg.Pool,
    address: str | None = None,
    interceptors: Sequence[Interceptor] = (),
) -> Client:
    return await connect_temporal(
        address or settings.temporal_address or "127.0.0.1:7233",
        pool,
        settings.temporal_namespace,
        settings.temporal_api_key,
        settings.claim_check_bytes,
        settings.encryption_keys,
        interceptors,
        tls_config(TemporalTls.of(settings), settings.temporal_api_key),
    )
