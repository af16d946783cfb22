"""Which addresses tools may reach: public ones, plus what the operator lists in MINT_EGRESS_ALLOW.

The check resolves the name once and the caller connects to exactly the address checked, so a name that
answers differently a moment later (DNS rebinding) cannot slip a private address past it. An IPv6 address
that carries an IPv4 address (IPv4-compatible, NAT64, 6to4, ISATAP) reaches that IPv4 address, so it is judged
by it.

A host and port given apart (an SMTP server's) are checked as they are, never joined into a URL first: a host
such as `127.0.0.1:25/` would make the URL's port (the one checked) differ from the one dialled. Such a host
must be a DNS host name or an IP address, nothing else.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
NAT64 = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052: the IPv4 address is the last 32 bits
LOCAL_NAT64 = ipaddress.ip_network("64:ff9b:1::/48")  # RFC 8215: local use, any prefix length
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")  # deprecated, still routed by some stacks
IPV4_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")  # SIIT (RFC 2765)
ISATAP_ID = 0x0000_5EFE  # the interface identifier's top half (the universal/local bit aside)
LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?", re.ASCII)  # RFC 1123 letters, digits, hyphens
MAX_HOST_NAME = 253


class EgressRefused(Exception):
    """The URL's scheme or address (or a host and port given apart) is not allowed."""


@dataclass(frozen=True)
class Destination:
    scheme: str
    host: str  # as written in the URL, or as given (for the Host header and TLS)
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
        if self._listed(host, port, ip):
            return True
        if isinstance(ip, ipaddress.IPv6Address) and (ip in LOCAL_NAT64 or ip.teredo):
            return False  # local NAT64 may put the IPv4 address anywhere; Teredo goes through a relay
        carried = embedded_ipv4(ip)
        if carried is not None:
            return self._listed(host, port, carried) or _public(carried)
        return _public(ip)

    def _listed(self, host: str, port: int, ip: IPAddress) -> bool:
        named = {host, f"{host}:{port}", str(ip), f"{ip}:{port}"}
        return bool(named & self.hosts) or any(ip in net for net in self.networks)

    async def resolve(self, url: str, quote: bool = True) -> Destination:
        """The address to connect to for `url`; EgressRefused unless every address it resolves to is allowed.

        With `quote=False` errors never repeat the URL or its host (a secret may be in them)."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            scheme = f", not {parts.scheme or 'no scheme'!r}" if quote else ""
            raise EgressRefused(f"only http and https URLs may be called{scheme}")
        host = (parts.hostname or "").lower()
        the_url, the_host = (f"URL {url!r}", host) if quote else ("the URL", "the URL's host")
        if not host:
            raise EgressRefused(f"{the_url} has no host")
        try:
            port = parts.port
        except ValueError:
            port = 0
        if port is None:
            port = 443 if parts.scheme == "https" else 80
        if not 0 < port < 65536:  # (port 0 is no port: it must not fall back to the default)
            raise EgressRefused(f"{the_url} has an invalid port")
        address = await self._checked(host, port, quote, the_host)
        return Destination(parts.scheme, host, port, address)

    async def resolve_host(self, host: object, port: object, quote: bool = True) -> Destination:
        """The address to connect to for `host` and `port` given apart (not in a URL), checked as given:
        `host` must be a DNS host name or an IP address and `port` a number from 1 to 65535, else
        EgressRefused, as for an address that is not allowed. Connect to the Destination's address and port."""
        name = host_name_or_address(host)
        if name is None:
            raise EgressRefused(
                f"{brief_repr(host)} is not a host name or an IP address"
                if quote
                else "the host is not valid"
            )
        number = port_number(port)
        if number is None:
            raise EgressRefused(
                f"the port must be a number from 1 to 65535{f', not {brief_repr(port)}' if quote else ''}"
            )
        address = await self._checked(name, number, quote, name if quote else "the host")
        return Destination("tcp", name, number, address)

    async def _checked(self, host: str, port: int, quote: bool, the_host: str) -> str:
        """The address to connect to, once every address `host` resolves to is allowed."""
        addresses = [host] if _is_address(host) else await _resolve(host, port, quote, the_host)
        for address in addresses:
            if not self._allowed(host, port, address):
                raise EgressRefused(
                    f"{the_host} resolves to {address}, which is not a public address; "
                    "list it in MINT_EGRESS_ALLOW to allow it"
                )
        return addresses[0]


def host_name_or_address(value: object) -> str | None:
    """`value` as a host to connect to (lowercase; an IP address in its canonical form), or None when it is
    anything but a DNS host name (RFC 1123 labels, ASCII) or an IPv4 or IPv6 address (without brackets or a
    zone): no port, path, user, brackets, spaces or line breaks, and no number the resolver would read as an
    IPv4 address in another spelling (`127.1`, `2130706433`, `0x7f000001`)."""
    if not isinstance(value, str) or not value.isascii():
        return None
    if "%" not in value:
        try:
            return str(ipaddress.ip_address(value))
        except ValueError:
            pass
    name = value.lower()
    labels = name.split(".")
    if len(name) > MAX_HOST_NAME or not all(LABEL.fullmatch(label) for label in labels):
        return None
    if labels[-1].isdigit():  # RFC 3696: a top-level label is never all digits; the resolver reads it as IPv4
        return None
    try:
        socket.inet_aton(name)  # hex and octal IPv4 spellings, which the resolver accepts
    except OSError:
        return name
    return None


def port_number(value: object) -> int | None:
    """`value` as a TCP port: an int from 1 to 65535 (not a bool, a float or a string), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 65536:
        return value
    return None


def brief_repr(value: object) -> str:
    """`value`'s repr, cut to 80 characters, for an error message."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _is_address(host: str) -> bool:
    """An IP address written as the host: nothing to resolve (and no thread to resolve it in)."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


async def _resolve(host: str, port: int, quote: bool, the_host: str) -> list[str]:
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise EgressRefused(
            f"cannot resolve {host!r}: {exc}" if quote else f"cannot resolve {the_host}"
        ) from None
    return [str(info[4][0]) for info in infos]


def embedded_ipv4(ip: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address leads to, when it carries one."""
    if isinstance(ip, ipaddress.IPv4Address):
        return None
    if ip.ipv4_mapped or ip.sixtofour:
        return ip.ipv4_mapped or ip.sixtofour
    if any(ip in net for net in (NAT64, IPV4_COMPATIBLE, IPV4_TRANSLATED)):
        return ipaddress.IPv4Address(int(ip) & 0xFFFF_FFFF)
    if (int(ip) >> 32) & ~0x0200_0000 & 0xFFFF_FFFF == ISATAP_ID:
        return ipaddress.IPv4Address(int(ip) & 0xFFFF_FFFF)
    return None


def _public(ip: IPAddress) -> bool:
    return ip.is_global and not ip.is_multicast  # Python counts 224.0.0.0/4 as global
