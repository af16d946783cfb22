"""`ffmpeg`: run the ffmpeg binary installed on the worker (found on PATH), never through a shell. `cmd` is
split like a shell would split it (quotes group words) and passed as a list of arguments, so `;`, `|` and
`$(...)` are just text; `file` (base64, or a list of them) is written to a fresh directory as `input` (or
`input0`, `input1`, ...), where ffmpeg runs. Julep's answer is {fileoutput: the newest file ffmpeg wrote, in
base64, result, mime_type}."""

from __future__ import annotations

import asyncio
import base64
import binascii
import mimetypes
import re
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Any

from mint.temporal import errors

DEFAULT_BASE_URL = ""  # (a local binary)
MAX_OUTPUT_BYTES = 64 * 1024 * 1024
# ffmpeg reads any path or URL it is given (and would reach the network past the egress check): a word that
# names a file outside its folder or a protocol is refused. Filters keep their `/` (scale=iw/2:ih/2).
OUTSIDE = re.compile(r"^[~/]|=\s*[~/]|\.\.|://|^[A-Za-z][A-Za-z0-9+.-]*:(?!\d)")


async def call(service: Any, method: str, setup: dict[str, Any], arguments: dict[str, Any]) -> Any:
    binary = shutil.which("ffmpeg")
    if binary is None:
        raise errors.permanent(
            "ffmpeg is not installed on this worker: install it (e.g. `apt-get install ffmpeg`) where "
            "`mint worker` runs, so that it is on the worker's PATH",
            "IntegrationUnavailable",
        )
    try:
        words = shlex.split(str(arguments["cmd"]))
    except ValueError as exc:
        raise errors.permanent(f"`cmd` cannot be read: {exc}", "BadToolCall") from None
    if words and Path(words[0]).name == "ffmpeg":
        words = words[1:]
    outside = [w for w in words if OUTSIDE.search(w)]
    if outside:
        raise errors.permanent(
            f"ffmpeg may only use the files given in `file` (input, input0, ...) and what it writes next to "
            f"them, not {outside[0]!r}",
            "BadToolCall",
        )
    with tempfile.TemporaryDirectory(prefix="mint-ffmpeg-") as folder:
        inputs = _write_inputs(Path(folder), arguments.get("file"))
        process = await asyncio.create_subprocess_exec(
            binary,
            *words,
            cwd=folder,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            _, stderr = await process.communicate()
        except asyncio.CancelledError:  # the deadline: the process must not outlive the call
            process.kill()
            await process.wait()
            raise
        if process.returncode != 0:
            tail = stderr.decode(errors="replace").strip()[-500:]
            raise errors.permanent(f"ffmpeg failed ({process.returncode}): {tail}", "IntegrationRefused")
        return _output(Path(folder), inputs)


def _write_inputs(folder: Path, raw: Any) -> set[str]:
    files = raw if isinstance(raw, list) else [raw] if raw else []
    names = ["input"] if len(files) == 1 else [f"input{i}" for i in range(len(files))]
    for name, content in zip(names, files, strict=True):
        try:
            (folder / name).write_bytes(base64.b64decode(str(content), validate=True))
        except (binascii.Error, ValueError):
            raise errors.permanent(
                "`file` must be base64 (or a list of base64 files)", "BadToolCall"
            ) from None
    return set(names)


def _output(folder: Path, inputs: set[str]) -> dict[str, Any]:
    written = [p for p in folder.iterdir() if p.is_file() and p.name not in inputs]
    if not written:
        return {"fileoutput": None, "result": True, "mime_type": None}
    newest = max(written, key=lambda p: p.stat().st_mtime_ns)
    if newest.stat().st_size > MAX_OUTPUT_BYTES:
        raise errors.permanent(f"ffmpeg's output is larger than {MAX_OUTPUT_BYTES} bytes", "ResponseTooLarge")
    mime = mimetypes.guess_type(newest.name)[0] or "application/octet-stream"
    return {"fileoutput": base64.b64encode(newest.read_bytes()).decode(), "result": True, "mime_type": mime}
