"""`mint up` checks every port it will listen on before it writes anything: a busy one stops it at once, in a
line naming the port, the flag that moves it, and the `mint up` that holds it when it is one."""

import signal
import socket
import subprocess
from pathlib import Path

from process.exit_codes import ExitCode
from tests.stack import MintUp


def _refused(up: MintUp) -> str:
    """Run `up` (it must refuse to start); what it said."""
    ran = subprocess.run(up.command(), env=up.env, capture_output=True, text=True, timeout=120)
    said = (ran.stdout + ran.stderr).strip()
    assert ran.returncode == ExitCode.ERROR, said
    return said


def test_a_busy_port_stops_mint_up_before_it_writes_anything(tmp_path: Path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        for attribute, flag in (
            ("api_port", "--api-port"),
            ("temporal_port", "--temporal-port"),
            ("ui_port", "--ui-port"),
        ):
            up = MintUp(tmp_path / f"data-{attribute}")
            setattr(up, attribute, busy)
            said = _refused(up)
            assert len(said.splitlines()) == 1, said
            assert said.startswith(f"Error: port {busy} ") and "is busy" in said and flag in said, said
            assert "TEMPORAL_ADDRESS" not in said, said
            assert not up.data_dir.exists(), f"{attribute}: the data dir was written"
    # Two of its own ports the same: said before anything binds.
    up = MintUp(tmp_path / "data-twice")
    up.ui_port = up.temporal_port
    said = _refused(up)
    assert f"port {up.temporal_port} is asked for twice" in said and "--ui-port" in said, said
    assert not up.data_dir.exists()


def test_a_port_another_mint_up_holds_names_it(tmp_path: Path):
    first = MintUp(tmp_path / "first")
    try:
        first.start()
        pid = first.process.pid  # type: ignore[union-attr]
        # Another data dir on the first one's Temporal port.
        other = MintUp(tmp_path / "other")
        other.temporal_port = first.temporal_port
        said = _refused(other)
        assert f"port {first.temporal_port} (the Temporal server) is busy" in said, said
        assert f"another `mint up` (pid {pid}, data dir {first.data_dir})" in said, said
        assert "--temporal-port" in said, said
        assert not other.data_dir.exists()
        # The same data dir on the same ports: it is already running there.
        said = _refused(first.again())
        assert f"`mint up` (pid {pid}) is already running on {first.data_dir}" in said, said
    finally:
        code, output = first.stop(signal.SIGINT)
        first.kill()
    assert code == 0, output
