"""How Mint reaches a Temporal it does not run: TLS, mTLS client certificates and API keys, named by the
environment variables Temporal's own CLI reads (`temporal options` lists them), so one environment serves
both `temporal` and `mint`.

Checked when `mint api` or `mint worker` starts: a certificate file that is missing, unreadable or not PEM
stops it with the variable's name, instead of a TLS handshake failing later with a gRPC error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from temporalio.service import TLSConfig

from infra.settings import Settings

PEM_MARK = b"-----BEGIN "


@dataclass(frozen=True)
class TemporalTls:
    """The TLS settings as given: each PEM is a path (`*_PATH`) or inline text (`*_DATA`), never both."""

    enabled: bool | None = None  # TEMPORAL_TLS: None means on when anything below (or an API key) is set
    client_cert_path: str | None = None  # TEMPORAL_TLS_CLIENT_CERT_PATH
    client_cert_data: str | None = None  # TEMPORAL_TLS_CLIENT_CERT_DATA
    client_key_path: str | None = None  # TEMPORAL_TLS_CLIENT_KEY_PATH
    client_key_data: str | None = None  # TEMPORAL_TLS_CLIENT_KEY_DATA
    server_ca_path: str | None = None  # TEMPORAL_TLS_SERVER_CA_CERT_PATH
    server_ca_data: str | None = None  # TEMPORAL_TLS_SERVER_CA_CERT_DATA
    server_name: str | None = None  # TEMPORAL_TLS_SERVER_NAME

    @classmethod
    def of(cls, settings: Settings) -> TemporalTls:
        """The TEMPORAL_TLS* settings, to check and turn into the client's TLS."""
        return cls(
            enabled=settings.temporal_tls,
            client_cert_path=settings.temporal_tls_client_cert_path,
            client_cert_data=settings.temporal_tls_client_cert_data,
            client_key_path=settings.temporal_tls_client_key_path,
            client_key_data=settings.temporal_tls_client_key_data,
            server_ca_path=settings.temporal_tls_server_ca_cert_path,
            server_ca_data=settings.temporal_tls_server_ca_cert_data,
            server_name=settings.temporal_tls_server_name,
        )

    def any_given(self) -> bool:
        return any(
            (
                self.client_cert_path,
                self.client_cert_data,
                self.client_key_path,
                self.client_key_data,
                self.server_ca_path,
                self.server_ca_data,
                self.server_name,
            )
        )


def tls_config(tls: TemporalTls, api_key: str | None = None) -> TLSConfig | bool:
    """What Client.connect takes as `tls`: False (plain gRPC, the dev server), True (TLS with the system's
    CAs, e.g. Temporal Cloud with an API key), or a TLSConfig (a private CA, a client certificate, a server
    name). ValueError names the variable that is wrong."""
    on = tls.enabled if tls.enabled is not None else bool(api_key) or tls.any_given()
    if not on:
        if tls.any_given():
            raise ValueError("TEMPORAL_TLS is false, but TEMPORAL_TLS_* settings are given: remove one")
        return False
    cert = _pem(tls.client_cert_path, tls.client_cert_data, "TEMPORAL_TLS_CLIENT_CERT")
    key = _pem(tls.client_key_path, tls.client_key_data, "TEMPORAL_TLS_CLIENT_KEY")
    if (cert is None) != (key is None):
        given, missing = ("CERT", "KEY") if cert is not None else ("KEY", "CERT")
        raise ValueError(
            f"TEMPORAL_TLS_CLIENT_{given}_PATH (or _DATA) is set but TEMPORAL_TLS_CLIENT_{missing}_PATH "
            "(or _DATA) is not: mTLS needs both the client certificate and its private key"
        )
    ca = _pem(tls.server_ca_path, tls.server_ca_data, "TEMPORAL_TLS_SERVER_CA_CERT")
    if cert is None and ca is None and not tls.server_name:
        return True
    return TLSConfig(server_root_ca_cert=ca, domain=tls.server_name, client_cert=cert, client_private_key=key)


def _pem(path: str | None, data: str | None, name: str) -> bytes | None:
    """The PEM text from `{name}_PATH` or `{name}_DATA`; ValueError when both are set, or the file cannot
    be read, or it is not PEM."""
    if path and data:
        raise ValueError(f"set {name}_PATH or {name}_DATA, not both")
    if data:
        text, where = data.encode(), f"{name}_DATA"
    elif path:
        where = f"{name}_PATH ({path})"
        try:
            text = Path(path).read_bytes()
        except FileNotFoundError:
            raise ValueError(f"{where}: no such file") from None
        except IsADirectoryError:
            raise ValueError(f"{where}: is a directory, not a PEM file") from None
        except PermissionError:
            raise ValueError(f"{where}: not readable by this user") from None
        except OSError as exc:
            raise ValueError(f"{where}: cannot be read ({exc.strerror})") from None
    else:
        return None
    if PEM_MARK not in text:
        raise ValueError(f"{where}: not PEM (no '-----BEGIN' line)")
    return text
