"""The ports `mint up` listens on, checked before it writes anything: a busy one stops it at once with a line
naming the port, the flag that moves it, and the process that holds it when that can be told (another
`mint up` most often), instead of a Temporal server that fails to start after Postgres did.

Only the fixed ports are checked: the Temporal dev server's other ports and the worker's metrics port are
free ones picked at start, and the embedded Postgres listens on a Unix socket.
"""

from __future__ import annotations

import errno
import socket
from dataclasses import dataclass
from pathlib import Path

import click
import psutil

from infra.settings import Settings


@dataclass(frozen=True)
class Port:
    host: str
    number: int
    what: str  # whose port it is, for a person
    flag: str  # what moves it


def up_ports(settings: Settings, temporal_port: int, ui_port: int) -> list[Port]:
    """Every fixed port `mint up` with these settings binds."""
    ports = [Port(settings.api_host, settings.api_port, "the Mint API", "--api-port or MINT_API_PORT")]
    if not settings.temporal_address:  # else it starts no Temporal server of its own
        ports.append(Port("127.0.0.1", temporal_port, "the Temporal server", "--temporal-port"))
        ports.append(Port("127.0.0.1", ui_port, "the Temporal UI", "--ui-port"))
    if settings.metrics_port is not None:
        ports.append(
            Port(settings.metrics_host, settings.metrics_port, "the API's metrics", "MINT_METRICS_PORT")
        )
    return ports


def check_ports(ports: list[Port], data_dir: Path) -> None:
    """A ClickException, one line per problem, when two of `ports` are the same or one cannot be bound. A
    Temporal server left running on data_dir by a `mint up` that was killed does not count: `mint up` stops
    it (process/leftovers.py)."""
    problems = _same_ports(ports)
    for port in ports:
        reason = _cannot_bind(port)
        if reason is None:
            continue
        holder = _holder(port.number)
        if holder is not None and _is_leftover_of(holder, data_dir):
            continue
        problems.append(f"port {port.number} ({port.what}) {reason}{_held_by(holder, data_dir, port)}")
    if problems:
        raise click.ClickException("\n".join(problems))


def _same_ports(ports: list[Port]) -> list[str]:
    seen: dict[int, Port] = {}
    problems = []
    for port in ports:
        if port.number in seen:
            first = seen[port.number]
            problems.append(
                f"port {port.number} is asked for twice: {first.what} ({first.flag}) and {port.what} "
                f"({port.flag}); give one of them another port"
            )
        seen.setdefault(port.number, port)
    return problems


def _cannot_bind(port: Port) -> str | None:
    """Why `port` cannot be listened on (as the servers listen: with SO_REUSEADDR), or None."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(port.host, port.number, type=socket.SOCK_STREAM)[
            0
        ]
    except socket.gaierror:
        return None  # the server says what is wrong with its host when it starts
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as exc:
            return "is busy" if exc.errno == errno.EADDRINUSE else f"cannot be used ({exc.strerror})"
    return None


def _holder(number: int) -> psutil.Process | None:
    """The process listening on TCP port `number`, if this user may see it."""
    try:
        for connection in psutil.net_connections(kind="tcp"):
            if connection.status == psutil.CONN_LISTEN and connection.laddr.port == number and connection.pid:
                return psutil.Process(connection.pid)
    except psutil.Error:
        pass
    return None


def _held_by(holder: psutil.Process | None, data_dir: Path, port: Port) -> str:
    """The rest of the line: who holds the port, and what to do."""
    up = _mint_up_of(holder) if holder is not None else None
    if up is not None:
        its_dir = _data_dir_of(up)
        if its_dir == data_dir:
            return f": `mint up` (pid {up.pid}) is already running on {data_dir}; use it, or stop it first"
        where = f", data dir {its_dir}" if its_dir else ""
        return (
            f": another `mint up` (pid {up.pid}{where}) holds it; stop it, "
            f"or give this one another port with {port.flag}"
        )
    named = f": held by pid {holder.pid} ({_name(holder)})" if holder is not None else ""
    return f"{named}; give `mint up` another port with {port.flag}"


def _mint_up_of(process: psutil.Process) -> psutil.Process | None:
    """`process` if it is a `mint up`, or the `mint up` that started it."""
    try:
        for candidate in (process, *process.parents()):
            command = candidate.cmdline()
            for i, word in enumerate(command[:-1]):
                if (word == "process.cli" or Path(word).name == "mint") and command[i + 1] == "up":
                    return candidate
    except psutil.Error:
        pass
    return None


def _data_dir_of(up: psutil.Process) -> Path | None:
    """The data dir a running `mint up` was given (./.mint of its working directory by default)."""
    try:
        command, cwd = up.cmdline(), Path(up.cwd())
    except psutil.Error:
        return None
    given = ".mint"
    for i, word in enumerate(command):
        if word == "--data-dir" and i + 1 < len(command):
            given = command[i + 1]
        elif word.startswith("--data-dir="):
            given = word.split("=", 1)[1]
    return (cwd / given).resolve()


def _is_leftover_of(holder: psutil.Process, data_dir: Path) -> bool:
    """Whether `holder` is a Temporal server on data_dir that no running `mint up` owns."""
    try:
        command = holder.cmdline()
    except psutil.Error:
        return False
    on_data_dir = any(
        a == "--db-filename" and b == str(data_dir / "temporal.db")
        for a, b in zip(command, command[1:], strict=False)
    )
    return on_data_dir and _mint_up_of(holder) is None


def _name(process: psutil.Process) -> str:
    try:
        return " ".join(process.cmdline()[:3]) or process.name()
    except psutil.Error:
        return "another process"
