"""Client commands against the real stack: every error names the API asked and how it was found, the hints
carry the flags that found it; `mint run` stops prompting for a wait answered elsewhere and ends with the
execution's own outcome; exit codes mean one thing each; `mint restart` runs an execution again from a step."""

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import click
import httpx

from process.exit_codes import ExitCode
from tests.helpers import as_foreground

EXAMPLES = Path(__file__).parent.parent / "examples"
MINT = (sys.executable, "-m", "process.cli")
WAITS = "name: asks\nmain:\n- evaluate:\n    x: $ 1\n- wait_for_input:\n    info:\n      question: Ship it?\n"
SLEEPS = "name: sleeps\nmain:\n- evaluate:\n    x: $ 1\n- sleep:\n    days: 1\n"
NOBODY = "00000000-0000-0000-0000-000000000000"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A user's shell: no MINT_API_URL or key unless given, and a per-user state of its own."""
    env = {k: v for k, v in os.environ.items() if k not in ("MINT_API_URL", "MINT_API_KEY", "MINT_API_PORT")}
    return {**env, "XDG_STATE_HOME": str(tmp_path / "state"), **extra}


def _mint(*args: str, env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*MINT, *args],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _data_dir(parent: Path, url: str, key: str) -> Path:
    """A data dir as a running `mint up` leaves it: its key, and its record naming a live process (this one)."""
    data_dir = parent / "data"
    data_dir.mkdir()
    (data_dir / "api_key").write_text(key + "\n")
    record = {"api_url": url, "pid": os.getpid(), "data_dir": str(data_dir)}
    (data_dir / "stack.json").write_text(json.dumps(record))
    return data_dir


async def test_every_client_error_names_the_api_it_asked_and_how_it_found_it(stack, api_key, tmp_path):
    missing = f"execution {NOBODY} not found (HTTP 404), from the Mint API at {stack.url}"
    by_flag = await asyncio.to_thread(
        _mint, "status", NOBODY, "--url", stack.url, env=_env(tmp_path, MINT_API_KEY=api_key)
    )
    assert by_flag.returncode == ExitCode.ERROR
    assert by_flag.stderr.strip() == f"Error: {missing} (given by --url)"
    by_env = await asyncio.to_thread(
        _mint, "status", NOBODY, env=_env(tmp_path, MINT_API_KEY=api_key, MINT_API_URL=stack.url)
    )
    assert by_env.stderr.strip() == f"Error: {missing} (from MINT_API_URL)"
    wrong_key = await asyncio.to_thread(
        _mint, "ls", env=_env(tmp_path, MINT_API_KEY="mint_wrong", MINT_API_URL=stack.url)
    )
    assert wrong_key.returncode == ExitCode.ERROR
    assert (
        "(HTTP 401), from the Mint API at" in wrong_key.stderr and "(from MINT_API_URL)" in wrong_key.stderr
    )

    data_dir = _data_dir(tmp_path, stack.url, api_key)
    by_dir = await asyncio.to_thread(_mint, "status", NOBODY, "--data-dir", str(data_dir), env=_env(tmp_path))
    assert by_dir.stderr.strip() == f"Error: {missing} (the running `mint up` of --data-dir {data_dir})"
    # From another directory with no data dir named: the `mint up` this user started last, named.
    pointer = tmp_path / "state" / "mint" / "current.json"
    pointer.parent.mkdir(parents=True)
    pointer.write_text((data_dir / "stack.json").read_text())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    by_pointer = await asyncio.to_thread(_mint, "status", NOBODY, env=_env(tmp_path), cwd=elsewhere)
    assert by_pointer.returncode == ExitCode.ERROR
    assert f"the `mint up` you started last, data dir {data_dir}" in by_pointer.stderr, by_pointer.stderr
    # Nothing running anywhere: the default port, said to be a guess.
    pointer.unlink()
    (data_dir / "stack.json").unlink()
    nothing = await asyncio.to_thread(
        _mint, "ls", env=_env(tmp_path, MINT_API_KEY="mint_k", MINT_API_PORT="9"), cwd=elsewhere
    )
    assert nothing.returncode == ExitCode.ERROR and len(nothing.stderr.strip().splitlines()) == 1
    assert (
        "cannot reach the Mint API at http://127.0.0.1:9 (MINT_API_PORT: no `mint up` is running"
        in nothing.stderr
    )


async def test_ctrl_c_hints_carry_the_data_dir_that_found_the_stack(stack, api_key, tmp_path):
    data_dir = _data_dir(tmp_path, stack.url, api_key)
    task = tmp_path / "sleeps.yaml"
    task.write_text(SLEEPS)
    run = await asyncio.create_subprocess_exec(
        *as_foreground([*MINT, "run", str(task), "--data-dir", str(data_dir)]),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=_env(tmp_path),
    )  # fmt: skip
    seen = await _read_until(run, "sleeping until")
    execution_id = re.search(r"execution (\S+)", seen).group(1)
    run.send_signal(signal.SIGINT)
    _, stderr = await asyncio.wait_for(run.communicate(), timeout=120)
    assert run.returncode == ExitCode.INTERRUPTED, stderr
    said = stderr.decode()
    for command in ("watch", "cancel"):
        assert f"mint {command} {execution_id} --data-dir {data_dir}" in said, said
    async with _client(stack, api_key) as api:
        await api.put(f"/executions/{execution_id}", json={"status": "cancelled"})


async def test_run_stops_prompting_when_the_wait_is_answered_elsewhere(stack, api_key, tmp_path):
    task = tmp_path / "asks.yaml"
    task.write_text(WAITS)
    run = await asyncio.create_subprocess_exec(
        *MINT, "run", str(task), "--url", stack.url,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env=_env(tmp_path, MINT_API_KEY=api_key),
    )  # fmt: skip
    # Answered once it prompts (with stdin open and nothing typed): the wait's transition line comes first,
    # and an answer sent then ends the wait before `mint run` ever asks.
    seen = await _read_until(run, "waiting for input at main[1]")
    execution_id = re.search(r"execution (\S+)", seen).group(1)
    async with _client(stack, api_key) as api:
        answered = await api.put(
            f"/executions/{execution_id}", json={"status": "running", "input": {"ok": 1}}
        )
        assert answered.status_code == 200, answered.text
    stdout, stderr = await asyncio.wait_for(run.communicate(), timeout=120)  # stdin stays unanswered
    said = seen + stdout.decode()
    assert run.returncode == ExitCode.OK, said + stderr.decode()
    assert "the wait at main[1] was answered elsewhere; following on" in said, said
    assert "succeeded" in said and '"ok": 1' in said
    assert "could not resume" not in stderr.decode()


async def test_run_with_stdin_closed_ends_with_the_executions_outcome(stack, api_key, tmp_path):
    task = tmp_path / "asks.yaml"
    task.write_text(WAITS)
    run = await asyncio.create_subprocess_exec(
        *MINT, "run", str(task), "--url", stack.url,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env=_env(tmp_path, MINT_API_KEY=api_key),
    )  # fmt: skip
    seen = await _read_until(run, "answer it with: mint resume")
    execution_id = re.search(r"execution (\S+)", seen).group(1)
    assert f"mint resume {execution_id} --input JSON --url {stack.url}" in seen, seen
    async with _client(stack, api_key) as api:
        await api.put(f"/executions/{execution_id}", json={"status": "running", "input": {"ok": 2}})
    stdout, stderr = await asyncio.wait_for(run.communicate(), timeout=120)
    assert run.returncode == ExitCode.OK, seen + stdout.decode() + stderr.decode()
    assert "no input on stdin" in stderr.decode() and '"ok": 2' in stdout.decode()


def test_exit_codes_are_distinct_and_usage_errors_have_their_own(tmp_path):
    assert len({code.value for code in ExitCode}) == len(ExitCode.__members__)
    env = _env(tmp_path, MINT_API_KEY="mint_k", MINT_API_URL="http://127.0.0.1:9")
    for args in (["ls", "--status", "bogus"], ["bogus"], ["status"], ["restart", NOBODY]):
        ran = _mint(*args, env=env)
        assert ran.returncode == ExitCode.USAGE, (args, ran.stderr)
    assert _mint("ls", env=env).returncode == ExitCode.ERROR  # nothing listens there


def test_a_crash_exits_with_error_not_with_pythons_1_which_reads_as_failed():
    from click.testing import CliRunner

    from process.exit_codes import MintGroup

    @click.group(cls=MintGroup)
    def group() -> None:
        pass

    @group.command()
    def crash() -> None:
        raise ZeroDivisionError("a bug")

    crashed = CliRunner().invoke(group, ["crash"])
    assert crashed.exit_code == ExitCode.ERROR and "ZeroDivisionError: a bug" in crashed.output
    assert CliRunner().invoke(group, ["--help"]).exit_code == ExitCode.OK


async def test_restart_runs_again_from_a_step_and_follows_the_new_execution(stack, api_key, tmp_path):
    env = _env(tmp_path, MINT_API_KEY=api_key)
    url = ("--url", stack.url)
    task = str(EXAMPLES / "restart.yaml")
    failed = await asyncio.to_thread(
        _mint, "run", task, "--input", '{"total": 90, "people": 0}', *url, env=env
    )
    assert failed.returncode == ExitCode.FAILED, failed.stdout + failed.stderr
    execution_id = re.search(r"execution (\S+)", failed.stdout).group(1)
    logs = await asyncio.to_thread(_mint, "logs", execution_id, *url, env=env)
    number, error_id = re.search(r"^#(\d+) +error .* id (\S+)$", logs.stdout, re.MULTILINE).groups()

    fixed = '{"total": 90, "people": 3}'
    for named in (f"#{number}", error_id):
        again = await asyncio.to_thread(
            _mint, "restart", execution_id, "--from", named, "--input", fixed, *url, env=env
        )
        assert again.returncode == ExitCode.OK, again.stdout + again.stderr
        assert f"restarted from execution {execution_id}" in again.stdout
        assert '"each": 30.0' in again.stdout and "succeeded" in again.stdout
    # A restart that fails again ends like the execution: failed.
    same = await asyncio.to_thread(_mint, "restart", execution_id, "--from", number, *url, env=env)
    assert same.returncode == ExitCode.FAILED, same.stdout + same.stderr
    none = await asyncio.to_thread(_mint, "restart", execution_id, "--from", "99", *url, env=env)
    assert none.returncode == ExitCode.ERROR and "none is #99" in none.stderr, none.stderr


def _client(stack, api_key: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=stack.url, headers={"Authorization": f"Bearer {api_key}"}, timeout=30)


async def _read_until(process: asyncio.subprocess.Process, text: str) -> str:
    """What the process printed up to the line holding `text` (it is killed if that never comes)."""
    seen: list[str] = []

    async def read() -> None:
        while not seen or text not in seen[-1]:
            line = await process.stdout.readline()
            assert line, f"the output ended before {text!r}: {''.join(seen)}"
            seen.append(line.decode())

    try:
        await asyncio.wait_for(read(), timeout=120)
    except BaseException:
        process.kill()
        raise
    return "".join(seen)
