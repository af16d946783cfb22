"""Free ports for the servers the tests start."""

from __future__ import annotations

import random
import socket

# Ports handed to servers the tests start come from below the kernel's ephemeral range (32768-60999 by
# default): a port the kernel gave out and took back can be given out again to anyone binding port 0, and a
# Temporal dev server picks its internal services' ports that way at start, so one once got the very port
# `mint up` had just been told to serve on (its worker service failed to bind and the server died).
UNEPHEMERAL_PORTS = (20_000, 32_000)


def free_port() -> int:
    """A port nothing listens on now, outside the range the kernel picks ports from."""
    for _ in range(1000):
        port = random.randrange(*UNEPHEMERAL_PORTS)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {UNEPHEMERAL_PORTS}")
