"""mTLS to Temporal for real: the test server's gRPC port behind a TLS proxy that demands a client certificate
signed by its CA (as a Temporal cluster with mTLS does). Mint connects with the TEMPORAL_TLS_* settings, and
without the client certificate it is refused."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from temporalio.api.workflowservice.v1 import GetSystemInfoRequest

from infra.settings import Settings
from infra.store.db import connect_pool
from infra.temporal.client import connect_from_settings
from tests.conftest import temporal_address


def _issue(name: str, issuer: tuple | None, ca: bool = False, server: bool = False):
    """A key and a certificate for `name`, signed by `issuer` (key, certificate) or by itself."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer[1].subject if issuer else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if server:
        names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    if not ca:
        usage = (
            x509.oid.ExtendedKeyUsageOID.SERVER_AUTH if server else x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH
        )
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    signer = issuer[0] if issuer else key
    return key, builder.sign(signer, hashes.SHA256())


def _write(path: Path, key, cert) -> tuple[Path, Path]:
    key_path, cert_path = path.with_suffix(".key"), path.with_suffix(".pem")
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return key_path, cert_path


@contextlib.asynccontextmanager
async def _mtls_proxy(upstream: str, tmp_path: Path) -> AsyncIterator[tuple[int, Path, Path, Path]]:
    """A TLS proxy to `upstream` that requires a client certificate: (port, CA, client cert, client key)."""
    ca = _issue("test CA", None, ca=True)
    _, ca_pem = _write(tmp_path / "ca", *ca)
    server_key, server_pem = _write(tmp_path / "server", *_issue("localhost", ca, server=True))
    client_key, client_pem = _write(tmp_path / "client", *_issue("mint", ca))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(ca_pem))
    context.load_cert_chain(server_pem, server_key)
    context.verify_mode = ssl.CERT_REQUIRED
    context.set_alpn_protocols(["h2"])
    host, port = upstream.rsplit(":", 1)

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(host, int(port))
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=context)
    try:
        yield server.sockets[0].getsockname()[1], ca_pem, client_pem, client_key
    finally:
        server.close()


async def test_mint_connects_through_mtls_with_the_cli_variables(postgres_url, temporal_env, tmp_path):
    pool = await connect_pool(postgres_url)
    try:
        async with _mtls_proxy(temporal_address(temporal_env), tmp_path) as (port, ca, cert, key):
            settings = Settings(
                temporal_address=f"127.0.0.1:{port}",
                temporal_tls_client_cert_path=str(cert),
                temporal_tls_client_key_path=str(key),
                temporal_tls_server_ca_cert_path=str(ca),
                temporal_tls_server_name="localhost",
            )
            client = await connect_from_settings(settings, pool)
            info = await client.workflow_service.get_system_info(GetSystemInfoRequest())
            assert info.server_version
            # The same server without the client certificate: the proxy refuses the handshake.
            anonymous = Settings(
                temporal_address=f"127.0.0.1:{port}",
                temporal_tls_server_ca_cert_path=str(ca),
                temporal_tls_server_name="localhost",
            )
            with pytest.raises(RuntimeError):
                await asyncio.wait_for(connect_from_settings(anonymous, pool), 30)
    finally:
        await pool.close()
