"""Which addresses tools may reach: public ones, plus what the operator lists in MINT_EGRESS_ALLOW."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from urllib.parse import urlsplit


class EgressRefused(Exception):
    """The URL's scheme or address is not allowed."""


class EgressPolicy:
    def __init__(self, allow: tuple[str, ...] = ()):
        self.networks = []
        self.hosts = set()
        for entry in allow:
            try:
                self.networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                self.hosts.add(entry.lower())

    def _allowed_address(self, host: str, port: int, address: str) -> bool:
        ip = ipaddress.ip_address(address)
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
            ip = ip.ipv4_mapped
        if host in self.hosts or f"{host}:{port}" in self.hosts:
            return True
        if any(ip in net for net in self.networks) or f"{ip}:{port}" in self.hosts or str(ip) in self.hosts:
            return True
        return ip.is_global

    async def check(self, url: str) -> None:
        """Raise EgressRefused unless every address `url` resolves to may be reached."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise EgressRefused(
                f"only http and https URLs may be called, not {parts.scheme or 'no scheme'!r}"
            )
        host = (parts.hostname or "").lower()
        if not host:
            raise EgressRefused(f"URL {url!r} has no host")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror as exc:
            raise EgressRefused(f"cannot resolve {host!r}: {exc}") from None
        for info in infos:
            address = str(info[4][0])
            if not self._allowed_address(host, port, address):
                raise EgressRefused(
                    f"{host} resolves to {address}, which is not a public address; "
                    "list it in MINT_EGRESS_ALLOW to allow it"
                )
