"""`email`: send one message over SMTP with aiosmtplib. The server is `setup.host`/`setup.port`, else
MINT_SMTP_HOST/MINT_SMTP_PORT; port 465 speaks TLS from the start (SMTPS), any other port upgrades with
STARTTLS when the server offers it. `user`/`password`, when given, log in. The host must be a DNS host name or
an IP address and the port a number from 1 to 65535; that host and port pass the same egress check as HTTP
calls (as they are: never joined into a URL, whose parsing could check one port and leave another to dial),
and the connection goes to exactly the address and port checked. Julep's answer is {success: true}.

SMTP has no idempotency key: the message's Message-ID is made from the call's key, the same on every
attempt, so that a retry after a lost answer is recognisably the same message.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
from email.message import EmailMessage
from typing import TypedDict

import aiosmtplib

from activities.egress import EgressRefused, brief_repr, host_name_or_address, port_number
from activities.integrations.common import Service
from contracts.json import JsonObject, JsonValue
from infra.temporal import errors

DEFAULT_BASE_URL = ""  # (SMTP: host and port instead)
METHODS = ("send",)
SMTPS_PORT = 465
DEFAULT_PORT = 587  # submission


class Answer(TypedDict):
    success: bool


async def call(service: Service, method: str, setup: JsonObject, arguments: JsonObject) -> Answer:
    host, port = _server(setup, service.smtp)
    message = _message(arguments, service.key)
    sock, public = await _connected(service, host, port)
    user = _text(setup.get("user"))
    client = aiosmtplib.SMTP(
        hostname=host,
        sock=sock,
        username=user,
        password=_text(setup.get("password")),
        use_tls=port == SMTPS_PORT,
        # A login to a server on the internet must not travel in the clear: STARTTLS is then required (a
        # server the operator allowed on a private address may do without); otherwise it is used if offered.
        start_tls=True if user and public and port != SMTPS_PORT else None,
        timeout=service.deadline,
    )
    try:
        await client.connect()
        await client.send_message(message)
        with contextlib.suppress(aiosmtplib.SMTPException):
            await client.quit()
    except aiosmtplib.SMTPResponseException as exc:
        # 5xx: the server refuses (a bad login, an unknown recipient); 4xx: try again later.
        text = f"the SMTP server refused the message ({exc.code}): {exc.message}"
        raise (errors.permanent if exc.code >= 500 else errors.transient)(text, "EmailRefused") from None
    except aiosmtplib.SMTPRecipientsRefused as exc:
        refused = "; ".join(f"{r.recipient}: {r.code} {r.message}" for r in exc.recipients)
        raise errors.permanent(f"the SMTP server refused the recipients: {refused}", "EmailRefused") from None
    except aiosmtplib.SMTPException as exc:
        raise errors.transient(f"the SMTP server could not be used: {exc}", "EmailUnavailable") from None
    finally:
        # Closed at once, not with QUIT: on a deadline the server may still be busy with the message.
        client.close()
        sock.close()
    return {"success": True}


def _text(value: JsonValue) -> str | None:
    """A login field as text; None when not given."""
    return str(value) if value else None


def _message(arguments: JsonObject, key: str) -> EmailMessage:
    message = EmailMessage()
    try:
        message["From"], message["To"] = str(arguments["from"]), str(arguments["to"])
        message["Subject"] = str(arguments["subject"])
        message["Message-ID"] = f"<{key}@mint.invalid>"
        message.set_content(str(arguments["body"]))
    except ValueError as exc:  # a header with a line break in it, say
        raise errors.permanent(f"the message cannot be written: {exc}", "BadToolCall") from None
    return message


def _server(setup: JsonObject, smtp: tuple[str | None, int | None]) -> tuple[str, int]:
    """The SMTP server's host (a DNS host name or an IP address, lowercase) and port, from `setup` or else
    MINT_SMTP_HOST/MINT_SMTP_PORT; anything else is a BadToolCall, never coerced into one."""
    raw_host = setup.get("host") or smtp[0]
    if not raw_host:
        raise errors.permanent("the email integration needs `setup.host` (or MINT_SMTP_HOST)", "BadToolCall")
    host = host_name_or_address(raw_host)
    if host is None:
        raise errors.permanent(
            f"the SMTP host must be a host name or an IP address alone (no port, path, user or brackets: the "
            f"port goes in `port`), not {brief_repr(raw_host)}",
            "BadToolCall",
        )
    raw_port = setup.get("port")
    if raw_port is None:
        raw_port = DEFAULT_PORT if smtp[1] is None else smtp[1]
    port = port_number(raw_port)
    if port is None:
        raise errors.permanent(
            f"the SMTP port must be a number from 1 to 65535, not {brief_repr(raw_port)}", "BadToolCall"
        )
    return host, port


async def _connected(service: Service, host: str, port: int) -> tuple[socket.socket, bool]:
    """A socket connected to the checked address and port of the SMTP server (its name is resolved once,
    here), and whether that address is a public one."""
    try:
        destination = await service.egress.resolve_host(host, port, quote=False)
    except EgressRefused as exc:
        raise errors.permanent(f"SMTP server {host}:{port}: {exc}", "EgressRefused") from None
    family = socket.AF_INET6 if ":" in destination.address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setblocking(False)
    try:
        await asyncio.get_running_loop().sock_connect(sock, (destination.address, destination.port))
    except OSError as exc:
        sock.close()
        raise errors.transient(
            f"cannot reach the SMTP server {host}:{port}: {exc}", "EmailUnavailable"
        ) from None
    return sock, ipaddress.ip_address(destination.address.split("%")[0]).is_global
