"""Lines typed (or piped) on stdin, read with a timeout: `mint run` waits for an answer to a wait and, at the
same time, watches whether the wait was answered elsewhere, so it must never block on stdin.

Lines are read from the file descriptor itself (select, then os.read), never through sys.stdin's buffer: a
buffered read would take in several piped lines at once, and select would then report nothing more to read
while lines wait in that buffer. Without a file descriptor (stdin replaced in a test harness), a line is read
the plain way, blocking.
"""

from __future__ import annotations

import io
import os
import select
import sys
from typing import TextIO


class TerminalInput:
    def __init__(self, stream: TextIO | None = None):
        self.stream = stream or sys.stdin
        try:
            self.fd: int | None = self.stream.fileno()
        except (OSError, ValueError, io.UnsupportedOperation):
            self.fd = None
        self.pending = b""
        self.ended = False

    def line(self, timeout: float) -> str | None:
        """The next line (without its newline), or None if none came within `timeout` seconds. EOFError once
        stdin has ended and every line it gave was read."""
        if self.fd is None:
            text = self.stream.readline()
            if text == "":
                raise EOFError
            return text.rstrip("\n")
        if b"\n" not in self.pending and not self.ended:
            readable, _, _ = select.select([self.fd], [], [], timeout)
            if readable:
                chunk = os.read(self.fd, 4096)
                self.pending += chunk
                self.ended = chunk == b""
        if b"\n" in self.pending:
            line, self.pending = self.pending.split(b"\n", 1)
            return line.decode(errors="replace")
        if self.ended:
            if self.pending:  # a last line without its newline
                line, self.pending = self.pending, b""
                return line.decode(errors="replace")
            raise EOFError
        return None

    def is_terminal(self) -> bool:
        return self.stream.isatty()
