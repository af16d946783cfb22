"""TLS to a Temporal that Mint does not run (infra/temporal/tls.py): the variables Temporal's CLI reads, what
they build, and the error a bad one gives when `mint worker` starts."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from temporalio.service import TLSConfig

from infra.settings import Settings
from infra.temporal.tls import TemporalTls, tls_config
from process.cli import cli

CERT = "-----BEGIN CERTIFICATE-----\nMIIB...\n-----END CERTIFICATE-----\n"
KEY = "-----BEGIN PRIVATE KEY-----\nMIIE...\n-----END PRIVATE KEY-----\n"
TLS_VARIABLES = (
    "TEMPORAL_TLS",
    "TEMPORAL_API_KEY",
    *(
        f"TEMPORAL_TLS_{n}_{k}"
        for n in ("CLIENT_CERT", "CLIENT_KEY", "SERVER_CA_CERT")
        for k in ("PATH", "DATA")
    ),
    "TEMPORAL_TLS_SERVER_NAME",
)


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    for name in TLS_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def _files(tmp_path: Path) -> tuple[Path, Path, Path]:
    cert, key, ca = tmp_path / "client.pem", tmp_path / "client.key", tmp_path / "ca.pem"
    cert.write_text(CERT)
    key.write_text(KEY)
    ca.write_text(CERT.replace("MIIB", "MIIC"))
    return cert, key, ca


def test_no_tls_settings_mean_plain_grpc_and_an_api_key_means_tls():
    assert tls_config(TemporalTls.of(Settings.from_env())) is False
    assert tls_config(TemporalTls(), api_key="cloud-key") is True
    assert tls_config(TemporalTls(enabled=True)) is True
    assert tls_config(TemporalTls(enabled=False), api_key="key-over-a-tls-proxy") is False


def test_the_cli_variables_build_an_mtls_config(monkeypatch, tmp_path):
    cert, key, ca = _files(tmp_path)
    monkeypatch.setenv("TEMPORAL_TLS_CLIENT_CERT_PATH", str(cert))
    monkeypatch.setenv("TEMPORAL_TLS_CLIENT_KEY_PATH", str(key))
    monkeypatch.setenv("TEMPORAL_TLS_SERVER_CA_CERT_PATH", str(ca))
    monkeypatch.setenv("TEMPORAL_TLS_SERVER_NAME", "temporal.internal")
    built = tls_config(TemporalTls.of(Settings.from_env()))
    assert isinstance(built, TLSConfig)
    assert built.client_cert == cert.read_bytes() and built.client_private_key == key.read_bytes()
    assert built.server_root_ca_cert == ca.read_bytes() and built.domain == "temporal.internal"


def test_inline_pem_works_as_well_as_a_path(monkeypatch):
    monkeypatch.setenv("TEMPORAL_TLS_CLIENT_CERT_DATA", CERT)
    monkeypatch.setenv("TEMPORAL_TLS_CLIENT_KEY_DATA", KEY)
    built = tls_config(TemporalTls.of(Settings.from_env()))
    assert isinstance(built, TLSConfig)
    assert (built.client_cert, built.client_private_key, built.server_root_ca_cert) == (
        CERT.encode(),
        KEY.encode(),
        None,
    )


@pytest.mark.parametrize(
    ("given", "says"),
    [
        (
            {"client_cert_path": "/nonexistent/client.pem"},
            "TEMPORAL_TLS_CLIENT_CERT_PATH (/nonexistent/client.pem): no such file",
        ),
        ({"server_ca_path": "{tmp}"}, "TEMPORAL_TLS_SERVER_CA_CERT_PATH ({tmp}): is a directory"),
        ({"server_ca_data": "not a certificate"}, "TEMPORAL_TLS_SERVER_CA_CERT_DATA: not PEM"),
        ({"client_cert_data": CERT}, "TEMPORAL_TLS_CLIENT_KEY_PATH (or _DATA) is not"),
        ({"client_key_data": KEY}, "TEMPORAL_TLS_CLIENT_CERT_PATH (or _DATA) is not"),
        ({"client_cert_data": CERT, "client_cert_path": "/x.pem"}, "TEMPORAL_TLS_CLIENT_CERT_PATH or"),
        ({"enabled": False, "server_name": "temporal.internal"}, "TEMPORAL_TLS is false"),
    ],
)
def test_a_bad_setting_is_named(tmp_path, given, says):
    given = {k: v.replace("{tmp}", str(tmp_path)) if isinstance(v, str) else v for k, v in given.items()}
    with pytest.raises(ValueError) as raised:
        tls_config(TemporalTls(**given))
    assert says.replace("{tmp}", str(tmp_path)) in str(raised.value)


def test_temporal_tls_takes_the_cli_spellings(monkeypatch):
    for raw, parsed in (("true", True), ("1", True), ("off", False), ("", None)):
        monkeypatch.setenv("TEMPORAL_TLS", raw)
        assert Settings.from_env().temporal_tls is parsed
    monkeypatch.setenv("TEMPORAL_TLS", "sometimes")
    with pytest.raises(ValueError, match="TEMPORAL_TLS must be true or false"):
        Settings.from_env()


def test_mint_worker_stops_at_a_missing_certificate_before_connecting(monkeypatch, tmp_path):
    env = {
        "MINT_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none",
        "TEMPORAL_ADDRESS": "127.0.0.1:1",
        "TEMPORAL_TLS_CLIENT_CERT_PATH": str(tmp_path / "gone.pem"),
        "TEMPORAL_TLS_CLIENT_KEY_DATA": KEY,
    }
    result = CliRunner().invoke(cli, ["worker"], env=env)
    assert result.exit_code != 0
    assert (
        f"Temporal TLS: TEMPORAL_TLS_CLIENT_CERT_PATH ({tmp_path / 'gone.pem'}): no such file"
        in result.output
    )
