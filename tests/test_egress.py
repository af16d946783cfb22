"""The SSRF corpus: addresses api_call tools (and MCP over HTTP) must never reach unless allow-listed.

Each case goes through EgressPolicy.resolve, the one check every outgoing call passes (activities/http.py and
activities/mcp.py connect to exactly the address it returns; redirects and a whole execution are covered in
test_tools.py), or EgressPolicy.resolve_host for a host and port given apart (the email provider's SMTP server:
test_integrations.py sends through it).
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import pytest
import uvicorn
from mcp.server.transport_security import TransportSecuritySettings
from temporalio.testing import ActivityEnvironment

from activities.egress import EgressPolicy, EgressRefused, host_name_or_address
from activities.mcp import McpActivities
from tests.mcp_server import server as calc
from tests.stack import free_port

REFUSED = [
    "http://127.0.0.1/",
    "http://localhost/",
    "http://localhost./",  # trailing dot
    "http://LOCALHOST:8080/",
    "http://2130706433/",  # 127.0.0.1 as a decimal number
    "http://0x7f000001/",  # ... as hex
    "http://0177.0.0.1/",  # ... with an octal first part
    "http://127.1/",  # ... shortened
    "http://0.0.0.0/",
    "http://[::1]/",
    "http://[::ffff:127.0.0.1]/",  # IPv4-mapped IPv6
    "http://[::ffff:7f00:1]/",  # the same, in hex
    "http://[fe80::1]/",  # IPv6 link-local
    "http://[fd00::1]/",  # IPv6 unique local
    "http://10.0.0.1/",
    "http://172.16.5.4/",
    "http://192.168.1.1/",
    "http://169.254.169.254/latest/meta-data/",  # cloud metadata
    "http://[fd00:ec2::254]/",  # AWS metadata over IPv6
    "http://[::127.0.0.1]/",  # IPv4-compatible IPv6 (deprecated, still routed by some stacks)
    "http://[::7f00:1]/",  # ... in hex
    "http://[::10.0.0.1]/",
    "http://[::169.254.169.254]/",
    "http://[::ffff:0:7f00:1]/",  # IPv4-translated (SIIT)
    "http://[64:ff9b::127.0.0.1]/",  # NAT64 (RFC 6052) in front of loopback
    "http://[64:ff9b::a9fe:a9fe]/",  # ... in front of cloud metadata
    "http://[64:ff9b::10.0.0.1]/",
    "http://[64:ff9b:1::a00:1]/",  # local-use NAT64 (RFC 8215)
    "http://[64:ff9b:1:0:a00:100::]/",  # ... with the IPv4 address inside, /48 style
    "http://[2002:7f00:1::1]/",  # 6to4 of 127.0.0.1
    "http://[2002:a9fe:a9fe::]/",  # 6to4 of 169.254.169.254
    "http://[2002:c0a8:101:1::1]/",  # 6to4 of 192.168.1.1
    "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",  # Teredo
    "http://[2600::5efe:a00:1]/",  # ISATAP: a public prefix, the interface id carries 10.0.0.1
    "http://[2600::200:5efe:7f00:1]/",  # ... with the universal/local bit set, carrying 127.0.0.1
    "http://100.64.0.1/",  # carrier-grade NAT
    "http://224.0.0.1/",  # multicast
    "http://255.255.255.255/",  # broadcast
    "http://user:pass@127.0.0.1/",  # credentials in front of a private host
    "http://example.com@127.0.0.1/",  # looks like example.com, is loopback
    "file:///etc/passwd",
    "gopher://127.0.0.1:25/",
    "ftp://127.0.0.1/",
    "http:///nohost",
    "http://127.0.0.1:99999/",  # an invalid port
    "http://93.184.215.14:0/",  # port 0 is no port (it once became the default, 80)
    "https://[2606:4700:4700::1111]:0/",
]


@pytest.mark.parametrize("url", REFUSED)
async def test_refused(url):
    with pytest.raises(EgressRefused):
        await EgressPolicy().resolve(url)


async def test_a_name_whose_answers_include_a_private_address_is_refused(monkeypatch):
    """A rebinding resolver: the name answers a public and a private address. Every answer must be
    allowed, and the caller connects to exactly the address checked, so a later answer cannot sneak in."""
    answers = [
        [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.215.14", 80))],
        [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.215.14", 80)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", 80)),
        ],
    ]

    async def rebinding(host, port, **_):
        return answers.pop(0)

    loop = asyncio.get_running_loop()
    monkeypatch.setattr(loop, "getaddrinfo", rebinding)
    first = await EgressPolicy().resolve("http://rebind.example/")
    assert first.address == "93.184.215.14"  # what the request is pinned to
    with pytest.raises(EgressRefused, match="127.0.0.1"):
        await EgressPolicy().resolve("http://rebind.example/")


@pytest.mark.parametrize(
    "allow, url",
    [
        (("127.0.0.1",), "http://127.0.0.1:8080/"),
        (("localhost",), "http://localhost:9/"),
        (("127.0.0.1:8080",), "http://127.0.0.1:8080/"),
        (("10.0.0.0/8",), "http://10.1.2.3/"),
    ],
)
async def test_the_operators_allow_list_opens_exactly_what_it_names(allow, url):
    assert (await EgressPolicy(allow).resolve(url)).address


@pytest.mark.parametrize(
    "url", ["http://[64:ff9b::8.8.8.8]/", "http://[2002:808:808::1]/", "http://[::ffff:8.8.8.8]/"]
)
async def test_an_embedded_public_ipv4_address_is_allowed(url):
    """NAT64 and 6to4 are how IPv6-only hosts reach the public IPv4 internet: judged by the address they
    carry, they are allowed like it."""
    assert (await EgressPolicy().resolve(url)).address


async def test_an_allow_listed_ipv4_network_opens_its_nat64_form_too():
    assert (await EgressPolicy(("10.0.0.0/8",)).resolve("http://[64:ff9b::10.1.2.3]/")).address


async def test_an_allow_list_entry_for_one_port_does_not_open_another():
    with pytest.raises(EgressRefused):
        await EgressPolicy(("127.0.0.1:8080",)).resolve("http://127.0.0.1:9090/")


# A host and port given apart: checked as they are, so the host must be a host name or an address.
HOSTS = [
    ("mail.example.com", "mail.example.com"),
    ("MAIL.Example.COM", "mail.example.com"),
    ("localhost", "localhost"),
    ("smtp-1.mail0.example", "smtp-1.mail0.example"),
    ("xn--bcher-kva.example", "xn--bcher-kva.example"),
    ("127.0.0.1", "127.0.0.1"),
    ("::1", "::1"),
    ("2001:DB8:0::1", "2001:db8::1"),
    ("::ffff:127.0.0.1", "::ffff:7f00:1"),
]
NOT_HOSTS = [
    "",
    "127.0.0.1:25",
    "127.0.0.1:25/",
    "127.0.0.1:25#",
    "127.0.0.1:25?",
    "127.0.0.1/",
    "user@127.0.0.1",
    "[::1]:25",
    "[::1]",
    "http://127.0.0.1",
    "127.0.0.1\n",
    "127.0.0.1\r\n",
    " 127.0.0.1",
    "127.0.0.1 ",
    "mail example.com",
    "mail.example.com.",
    "mail..example.com",
    "-mail.example.com",
    "mail_server.example",
    "bücher.example",
    "ｌｏｃａｌｈｏｓｔ",
    "127.1",
    "2130706433",
    "0x7f000001",
    "0x7f.1",
    "0177.0.0.1",
    "fe80::1%eth0",
    "a" * 64 + ".example",
    "a." * 127 + "example",
    2130706433,
    None,
    True,
    b"127.0.0.1",
    ["127.0.0.1"],
]
ANY_LOOPBACK = ("127.0.0.0/8", "::1", "localhost")


@pytest.mark.parametrize("value, host", HOSTS)
def test_a_host_name_or_address_is_taken_as_written(value, host):
    assert host_name_or_address(value) == host


@pytest.mark.parametrize("value", NOT_HOSTS)
async def test_anything_else_is_no_host_to_connect_to(value):
    assert host_name_or_address(value) is None
    with pytest.raises(EgressRefused, match="not a host name or an IP address"):
        await EgressPolicy(ANY_LOOPBACK).resolve_host(value, 25)


@pytest.mark.parametrize("port", [0, -1, 65536, "25", " 25", "25/", True, 25.0, None, [25]])
async def test_a_port_given_apart_is_a_number_from_1_to_65535(port):
    with pytest.raises(EgressRefused, match="port must be a number from 1 to 65535"):
        await EgressPolicy(ANY_LOOPBACK).resolve_host("127.0.0.1", port)


async def test_a_host_and_port_given_apart_are_checked_as_given():
    policy = EgressPolicy(("127.0.0.1:2525",))
    destination = await policy.resolve_host("127.0.0.1", 2525)
    assert (destination.host, destination.port, destination.address) == ("127.0.0.1", 2525, "127.0.0.1")
    with pytest.raises(EgressRefused, match="not a public address"):
        await policy.resolve_host("127.0.0.1", 2526)


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "10.0.0.1", "169.254.169.254", "::1", "::ffff:127.0.0.1", "64:ff9b::a9fe:a9fe"]
)
async def test_a_private_host_given_apart_is_refused(host):
    with pytest.raises(EgressRefused, match="not a public address"):
        await EgressPolicy().resolve_host(host, 25)


class McpHttpServer:
    """tests/mcp_server.py's `calc` server over Streamable HTTP on 127.0.0.1, in a thread."""

    def __init__(self) -> None:
        # The server's own Host check is off: the test reaches it under a made-up name.
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        app = calc.streamable_http_app(transport_security=security, stateless_http=True, json_response=True)
        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="error"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> McpHttpServer:
        self.thread.start()
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError("the MCP server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)


async def test_an_mcp_server_is_reached_at_the_address_the_check_approved(monkeypatch):
    """A rebinding name: the first lookup (the egress check's) answers loopback, which the operator allowed;
    any later one answers 127.0.0.2, where nothing listens. The MCP client must not look the name up again."""
    real, lookups = socket.getaddrinfo, []

    def rebinding(host, port, *args, **kwargs):
        if host != "mcp.rebind.test":
            return real(host, port, *args, **kwargs)
        lookups.append(host)
        return real("127.0.0.1" if len(lookups) == 1 else "127.0.0.2", port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    activities = McpActivities({}, EgressPolicy(("127.0.0.1",)))
    with McpHttpServer() as server:
        integration = {"provider": "mcp", "setup": {"url": f"http://mcp.rebind.test:{server.port}/mcp"}}
        listed = await ActivityEnvironment().run(activities.list_mcp_tools, integration)
    assert [tool.name for tool in listed] == ["add"]
    assert lookups == ["mcp.rebind.test"]
