"""Where client commands (`mint run`, `mint ls`, ...) find the stack, and how they talk to it.

`mint up` records where it serves in its data dir (stack.json, beside the API key it keeps there) and, for
commands run from another directory, in a per-user pointer ($XDG_STATE_HOME/mint/current.json, by default
~/.local/state/mint/current.json) naming its data dir. find_stack() is the one place a client command gets
the API URL and key; api_client() makes its HTTP client, which turns "cannot connect" into one line saying
what to do.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import click
import httpx

from contracts.json import JsonObject

STACK_FILE = "stack.json"
POINTER_FILE = "current.json"
DEFAULT_DATA_DIR = Path(".mint")

# The options every client command takes (the data dir defaults to ./.mint, then the running `mint up`).
DATA_DIR_OPTION = click.option(
    "--data-dir",
    default=None,
    type=click.Path(file_okay=False, path_type=Path),
    help="The data dir of the `mint up` to use (default: ./.mint, else the `mint up` you started last).",
)
URL_OPTION = click.option(
    "--url", default=None, help="The Mint API (default: MINT_API_URL, or what `mint up` recorded)."
)


class StackRecord(TypedDict):
    """What a `mint up` records of itself (data_dir/stack.json, and the per-user pointer): no secret."""

    api_url: str
    pid: int
    data_dir: str


@dataclass(frozen=True)
class StackAddress:
    """Where a client command sends its requests, with its key; `found` says how that API was chosen (every
    error names it), `flags` are the options that choose it again (the hints a command prints carry them)."""

    url: str
    key: str
    found: str = field(default="", compare=False)
    flags: tuple[str, ...] = field(default=(), compare=False)

    def where(self) -> str:
        """`the Mint API at URL (how it was found)`, for a sentence."""
        return f"the Mint API at {self.url}" + (f" ({self.found})" if self.found else "")

    def command(self, *words: str) -> str:
        """A `mint` command line to suggest: `words`, then the flags that reach this same API."""
        return " ".join(("mint", *words, *(shlex.quote(flag) for flag in self.flags)))


def record_stack(data_dir: Path, api_url: str) -> None:
    """Say where this process (`mint up`) serves data_dir: in data_dir/stack.json and in the per-user
    pointer. Both are written owner-only and name no secret."""
    record = StackRecord(api_url=api_url, pid=os.getpid(), data_dir=str(data_dir))
    _write_owner_only(data_dir / STACK_FILE, record)
    pointer = pointer_path()
    pointer.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    _write_owner_only(pointer, record)


def forget_stack() -> None:
    """Remove the per-user pointer if it names this process (a later `mint up` elsewhere may own it now).
    data_dir/stack.json stays: it still says where that data dir's API was last served."""
    pointer = pointer_path()
    if (_read_json(pointer) or {}).get("pid") == os.getpid():
        pointer.unlink(missing_ok=True)


def running_stack(data_dir: Path) -> StackRecord | None:
    """What the `mint up` serving data_dir recorded (api_url, pid), if it is still running."""
    return _live(_read_json(data_dir / STACK_FILE))


def pointer_path() -> Path:
    """The per-user pointer to the `mint up` started last, in the XDG state dir (relative values are
    ignored, as the XDG spec says)."""
    state = os.environ.get("XDG_STATE_HOME", "")
    base = Path(state) if os.path.isabs(state) else Path.home() / ".local" / "state"
    return base / "mint" / POINTER_FILE


def find_stack(data_dir: Path | None = None, url: str | None = None) -> StackAddress:
    """The API URL and key for a client command, and how they were found.

    URL: `url` (a flag), else MINT_API_URL, else the running `mint up` of data_dir; when no data dir is
    given, the one of ./.mint, else the `mint up` this user started last (wherever its data dir is); else
    where data_dir's `mint up` served last (so that the error names it), else http://127.0.0.1:8080 (or
    MINT_API_PORT). Records of processes that are gone are ignored.
    Key: MINT_API_KEY, else the key `mint up` keeps in the data dir the URL came from."""
    local = (data_dir or DEFAULT_DATA_DIR).resolve()
    given = ("--data-dir", str(local)) if data_dir else ()
    if url:
        found = _Found(url, "given by --url", local, ("--url", url, *given))
    elif os.environ.get("MINT_API_URL"):
        found = _Found(os.environ["MINT_API_URL"], "from MINT_API_URL", local, given)
    else:
        found = _recorded(local, data_dir is not None)
    key = os.environ.get("MINT_API_KEY") or _read(found.key_dir / "api_key")
    stack = StackAddress(found.url.rstrip("/"), key or "", found.how, found.flags)
    if not key:
        raise click.ClickException(
            f"no API key for {stack.where()}: `mint up` keeps one in {found.key_dir} (use --data-dir) "
            "or set MINT_API_KEY"
        )
    return stack


@dataclass(frozen=True)
class _Found:
    url: str
    how: str  # for a person: how this URL was chosen
    key_dir: Path  # where `mint up` keeps the key that goes with it
    flags: tuple[str, ...]  # what chooses it again


def _recorded(local: Path, named: bool) -> _Found:
    """The API a `mint up` recorded: the running one of `local` (named by --data-dir, or ./.mint), else (when
    no data dir was named) the one this user started last, else where `local`'s served last, else the
    default port."""
    flags = ("--data-dir", str(local))
    which = "--data-dir" if named else "./.mint"
    record = running_stack(local)
    if record is not None:
        return _Found(record["api_url"], f"the running `mint up` of {which} {local}", local, flags)
    latest = None if named else _live(_read_json(pointer_path()))
    if latest is not None:
        elsewhere = Path(latest["data_dir"])
        how = f"the `mint up` you started last, data dir {elsewhere}; --data-dir or --url chooses another"
        return _Found(latest["api_url"], how, elsewhere, ("--data-dir", str(elsewhere)))
    last_url = (_read_json(local / STACK_FILE) or {}).get("api_url")
    if isinstance(last_url, str) and last_url:
        return _Found(
            last_url, f"where the `mint up` of {which} {local} served last; it is not running", local, flags
        )
    port = os.environ.get("MINT_API_PORT")
    how = (
        f"{'MINT_API_PORT' if port else 'the default port'}: no `mint up` is running for {local} or this user"
    )
    return _Found(f"http://127.0.0.1:{port or 8080}", how, local, flags if named else ())


def api_client(stack: StackAddress, timeout: float = 30) -> MintApi:
    """An HTTP client for the Mint API at `stack`, authenticated with its key. When the API cannot be
    reached (or drops the connection), a request raises a one-line click.ClickException saying what to do,
    and which API it asked, instead of httpx's traceback."""
    return MintApi(stack, timeout)


class MintApi(httpx.Client):
    """An HTTP client of the Mint API, knowing the stack it talks to (its errors name it)."""

    def __init__(self, stack: StackAddress, timeout: float):
        super().__init__(
            base_url=stack.url,
            headers={"Authorization": f"Bearer {stack.key}"},
            timeout=timeout,
            transport=_ExplainingTransport(stack),
        )
        self.stack = stack


def unreachable_message(url: str, found: str = "") -> str:
    where = StackAddress(url, "", found).where()
    return f"cannot reach {where}: start it with `mint up` (or set MINT_API_URL)"


class _ExplainingTransport(httpx.BaseTransport):
    """httpx's transport, with its connection errors (also while a response streams) said in one line."""

    def __init__(self, stack: StackAddress):
        self.stack = stack
        self.inner = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        with _explained_errors(self.stack):
            response = self.inner.handle_request(request)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_ExplainedStream(response.stream, self.stack),
            extensions=response.extensions,
        )

    def close(self) -> None:
        self.inner.close()


class _ExplainedStream(httpx.SyncByteStream):
    def __init__(self, inner: Any, stack: StackAddress):
        self.inner = inner
        self.stack = stack

    def __iter__(self) -> Iterator[bytes]:
        with _explained_errors(self.stack):
            yield from self.inner

    def close(self) -> None:
        self.inner.close()


@contextlib.contextmanager
def _explained_errors(stack: StackAddress) -> Iterator[None]:
    """httpx's transport errors, as a click.ClickException naming the API (and how it was found) and what to
    do."""
    try:
        yield
    except (httpx.ConnectError, httpx.ConnectTimeout):
        raise click.ClickException(unreachable_message(stack.url, stack.found)) from None
    except httpx.TimeoutException:
        raise click.ClickException(f"{stack.where()} did not answer in time") from None
    except httpx.TransportError as error:
        raise click.ClickException(
            f"lost the connection to {stack.where()} ({error or type(error).__name__}): "
            "is `mint up` still running?"
        ) from None


def _live(found: JsonObject | None) -> StackRecord | None:
    """The record a stack file holds, if the process that wrote it still runs."""
    from process.leftovers import is_alive

    pid, api_url, data_dir = (
        (found or {}).get("pid"),
        (found or {}).get("api_url"),
        (found or {}).get("data_dir"),
    )
    if not isinstance(pid, int) or not isinstance(api_url, str) or not api_url or not is_alive(pid):
        return None
    return StackRecord(api_url=api_url, pid=pid, data_dir=str(data_dir))


def _write_owner_only(path: Path, record: StackRecord) -> None:
    """Write JSON to `path` whole (a reader never sees half of it), readable by its owner only."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    with os.fdopen(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as file:
        file.write(json.dumps(record) + "\n")
    os.replace(temporary, path)


def _read_json(path: Path) -> JsonObject | None:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _read(path: Path) -> str | None:
    return path.read_text().strip() if path.exists() else None
