"""`ffmpeg`: run the ffmpeg binary installed on the worker (found on PATH), confined, never through a shell.
`cmd` is split like a shell would split it (quotes group words), checked word by word against an allow-list
(ffmpeg_command.py) and passed as a list of arguments, so `;`, `|` and `$(...)` are just text; `file`
(base64, or a list of them) is written to a fresh folder as `input` (or `input0`, `input1`, ...), where ffmpeg
runs with nothing else of the machine to read or write and no network (activities/confined.py). Julep's answer
is {fileoutput: the newest file ffmpeg wrote, in base64, result, mime_type}."""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import mimetypes
import os
import shlex
import shutil
import stat
import tempfile
from pathlib import Path
from typing import TypedDict

from activities import confined
from activities.integrations.common import Service
from activities.integrations.ffmpeg_command import Refused, parse
from contracts.json import JsonObject, JsonValue
from infra.temporal import errors

DEFAULT_BASE_URL = ""  # (a local binary)
METHODS = ("bash_cmd",)
MAX_OUTPUT_BYTES = confined.Limits().file_bytes  # the kernel stops ffmpeg past it (RLIMIT_FSIZE)
MAX_INPUTS = 16
# ffmpeg processes one worker runs at once: each may take a core and gigabytes, and a tenant may start many
# executions; the rest wait their turn within their call's deadline.
MAX_RUNNING = max(2, os.cpu_count() or 2)
_running: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}  # per event loop (a worker has one)


class Answer(TypedDict):
    """Julep's answer: the newest output in base64 (None when ffmpeg wrote none), and its type."""

    fileoutput: str | None
    result: bool
    mime_type: str | None


async def call(service: Service, method: str, setup: JsonObject, arguments: JsonObject) -> Answer:
    binary = shutil.which("ffmpeg")
    if binary is None:
        raise errors.permanent(
            "ffmpeg is not installed on this worker: install it (e.g. `apt-get install ffmpeg`) where "
            "`mint worker` runs, so that it is on the worker's PATH",
            "IntegrationUnavailable",
        )
    if (problem := await confined.problem(binary, ["-version"])) is not None:
        raise errors.permanent(
            f"ffmpeg cannot run confined on this worker, so it does not run: {problem} (the worker needs "
            "bubblewrap and user namespaces: see docs/security.md)",
            "IntegrationUnavailable",
        )
    try:
        words = shlex.split(str(arguments["cmd"]))
    except ValueError as exc:
        raise errors.permanent(f"`cmd` cannot be read: {exc}", "BadToolCall") from None
    if words and Path(words[0]).name == "ffmpeg":
        words = words[1:]
    with tempfile.TemporaryDirectory(prefix="mint-ffmpeg-") as folder:
        inputs = _write_inputs(Path(folder), arguments.get("file"))
        try:
            command = parse(words, inputs)
        except Refused as exc:
            raise errors.permanent(
                f"{exc} (ffmpeg may only read the files given in `file`: input, input0, ...; write plain file "
                "names next to them; and use the options, formats, codecs and filters Mint allows)",
                "BadToolCall",
            ) from None
        slots = _running.setdefault(asyncio.get_running_loop(), asyncio.Semaphore(MAX_RUNNING))
        async with slots:
            finished = await confined.run(binary, command.argv, Path(folder))
        if finished.returncode != 0:
            tail = finished.stderr_tail.strip()[-500:]
            raise errors.permanent(
                f"ffmpeg failed ({_how(finished.returncode)}): {tail}", "IntegrationRefused"
            )
        return _output(Path(folder), set(command.outputs))


def _how(returncode: int) -> str:
    """ffmpeg's exit code, or the limit that stopped it."""
    stopped_by = {-24: "its CPU time limit", -25: f"the {MAX_OUTPUT_BYTES}-byte output limit", -9: "a kill"}
    return f"stopped by {stopped_by[returncode]}" if returncode in stopped_by else str(returncode)


def _write_inputs(folder: Path, raw: JsonValue) -> set[str]:
    files = raw if isinstance(raw, list) else [raw] if raw else []
    if len(files) > MAX_INPUTS:
        raise errors.permanent(f"`file` may list at most {MAX_INPUTS} files", "BadToolCall")
    names = ["input"] if len(files) == 1 else [f"input{i}" for i in range(len(files))]
    for name, content in zip(names, files, strict=True):
        try:
            (folder / name).write_bytes(base64.b64decode(str(content), validate=True))
        except (binascii.Error, ValueError):
            raise errors.permanent(
                "`file` must be base64 (or a list of base64 files)", "BadToolCall"
            ) from None
    return set(names)


def _output(folder: Path, outputs: set[str]) -> Answer:
    """The newest of the files the command named as outputs (nothing else in the folder is read). They are
    opened without following links: the folder is the confined user's, who could swap in a link."""
    written = []
    for name in outputs:
        with contextlib.suppress(OSError):
            descriptor = os.open(folder / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            status = os.fstat(descriptor)
            if stat.S_ISREG(status.st_mode):
                written.append((status.st_mtime_ns, name, descriptor, status.st_size))
            else:
                os.close(descriptor)
    try:
        if not written:
            return {"fileoutput": None, "result": True, "mime_type": None}
        _, name, descriptor, size = max(written)
        if size > MAX_OUTPUT_BYTES:
            raise errors.permanent(
                f"ffmpeg's output is larger than {MAX_OUTPUT_BYTES} bytes", "ResponseTooLarge"
            )
        with os.fdopen(os.dup(descriptor), "rb") as file:
            content = file.read(MAX_OUTPUT_BYTES + 1)
    finally:
        for _, _, descriptor, _ in written:
            os.close(descriptor)
    mime = mimetypes.guess_type(name)[0] or "application/octet-stream"
    return {"fileoutput": base64.b64encode(content).decode(), "result": True, "mime_type": mime}
