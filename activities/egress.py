"""Which addresses tools may reach: public ones, plus what the operator lists in MINT_EGRESS_ALLOW.

The check resolves the name once and the caller connects to exactly the address checked, so a name that
answers differently a moment later (DNS rebinding) cannot slip a private address past it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit


class EgressRefused(Exception):
    """The URL's scheme or address is not allowed."""


@dataclass(frozen=True)
class Destination:
    scheme: str
    host: str  # as written in the URL (for the Host header and TLS)
    port: int
    address: str  # the checked IP to connect to


class EgressPolicy:
    def __init__(self, allow: tuple[str, ...] = ()):
        self.networks = []
        self.hosts = set()
        for entry in allow:
            try:
                self.networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                self.hosts.add(entry.lower())

    def _allowed(self, host: str, port: int, address: str) -> bool:
        ip = ipaddress.ip_address(address.split("%")[0])
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
            ip = ip.ipv4_mapped
        named = {host, f"{host}:{port}", str(ip), f"{ip}:{port}"}
        if named & self.hosts or any(ip in net for net in self.networks):
            return True
        return ip.is_global and not ip.is_multicast  # Python counts 224.0.0.0/4 as global

    async def resolve(self, url: str) -> Destination:
        """The address to connect to for `url`; EgressRefused unless every address it resolves to is allowed."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise EgressRefused(
                f"only http and https URLs may be called, not {parts.scheme or 'no scheme'!r}"
            )
        host = (parts.hostname or "").lower()
        if not host:
            raise EgressRefused(f"URL {url!r} has no host")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise EgressRefused(f"URL {url!r} has an invalid port") from None
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as exc:
            raise EgressRefused(f"cannot resolve {host!r}: {exc}") from None
        addresses = [str(info[4][0]) for info in infos]
        for address in addresses:
            if not self._allowed(host, port, address):
                raise EgressRefused(
                    f"{host} resolves to {address}, which is not a public address; "
                    "list it in MINT_EGRESS_ALLOW to allow it"
                )
        return Destination(parts.scheme, host, port, addresses[0])
