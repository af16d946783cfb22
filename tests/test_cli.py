"""The `mint` command: `run` shows progress and answers waits; `ls`, `status`, `watch`, `logs`, `resume` and
`cancel` reach executions later; `developer create` prints a working key. Each runs as a subprocess against
the real stack."""

import asyncio
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from process.exit_codes import ExitCode
from tests.helpers import as_foreground, create_agent, create_task, start, transitions, wait_for_status

EXAMPLES = Path(__file__).parent.parent / "examples"
WAITS = {
    "name": "asks",
    "main": [{"evaluate": {"x": "$ 1"}}, {"wait_for_input": {"info": {"question": "Ship it?"}}}],
}
SLEEPS = "name: sleeps\nmain:\n- evaluate:\n    x: $ 1\n- sleep:\n    days: 1\n"


def _mint(*args: str, env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "process.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )


async def test_run_prints_transitions_and_exits_zero_on_success(stack, api_key):
    result = await asyncio.to_thread(
        _mint,
        "run",
        str(EXAMPLES / "map_reduce.yaml"),
        "--input",
        '{"words": ["ab", "aeiou"]}',
        "--url",
        stack.url,
        env={"MINT_API_KEY": api_key},
    )
    assert result.returncode == 0, result.stderr
    assert "init" in result.stdout and "finish" in result.stdout and "succeeded" in result.stdout
    assert '"best": "aeiou"' in result.stdout


async def test_run_prompts_for_input_and_exits_nonzero_on_failure(stack, api_key):
    result = await asyncio.to_thread(
        _mint,
        "run",
        str(EXAMPLES / "approval.yaml"),
        "--input",
        '{"amount": 99, "reason": "chairs"}',
        "--url",
        stack.url,
        env={"MINT_API_KEY": api_key},
        stdin='{"approved": false}\n',
    )
    assert result.returncode == 1, result.stdout
    assert "waiting for input" in result.stdout and "Approve?" in result.stdout
    assert "Expense rejected by the approver" in result.stderr


async def test_run_reports_an_invalid_task_with_paths(stack, api_key, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nmain:\n- evaluate:\n    x: $ nope +\n")
    result = await asyncio.to_thread(
        _mint, "run", str(bad), "--url", stack.url, env={"MINT_API_KEY": api_key}
    )
    assert result.returncode != 0
    assert "main[0].evaluate.x" in result.stderr and "syntax error" in result.stderr
    assert result.stderr.count("syntax error") == 1, result.stderr  # each problem once


async def test_run_prints_how_ambiguous_strings_were_read(stack, api_key, tmp_path):
    julep = tmp_path / "julep.yaml"
    julep.write_text("name: weather\nmain:\n- evaluate:\n    location: New York\n    n: 24*3600\n")
    result = await asyncio.to_thread(
        _mint, "run", str(julep), "--url", stack.url, env={"MINT_API_KEY": api_key}
    )
    assert result.returncode == 0, result.stderr
    assert "warning: main[0].evaluate.location: read as text" in result.stderr
    assert "warning: main[0].evaluate.n: read as Python" in result.stderr
    assert '"location": "New York"' in result.stdout and '"n": 86400' in result.stdout


async def test_run_says_a_warning_shared_by_many_strings_once(stack, api_key, tmp_path):
    julep = tmp_path / "julep.yaml"
    julep.write_text("name: sums\nmain:\n- evaluate:\n    a: 1+1\n    b: 2*3\n- sleep: 0*1\n")
    result = await asyncio.to_thread(
        _mint, "run", str(julep), "--url", stack.url, env={"MINT_API_KEY": api_key}
    )
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1, result.stderr
    assert warnings[0].startswith(
        "warning: main[0].evaluate.a, main[0].evaluate.b, main[1].sleep: read as Python"
    )


async def test_developer_create_prints_a_key_that_works(stack, postgres_url):
    result = await asyncio.to_thread(
        _mint, "developer", "create", "acme", env={"MINT_DATABASE_URL": postgres_url}
    )
    assert result.returncode == 0, result.stderr
    key = result.stdout.split("API key:")[1].strip()
    async with httpx.AsyncClient(base_url=stack.url, headers={"Authorization": f"Bearer {key}"}) as client:
        assert (await client.get("/agents")).json() == {"items": []}


async def test_keys_can_be_added_and_revoked(stack, store, postgres_url, monkeypatch):
    from click.testing import CliRunner

    from process.cli import cli

    developer_id, first = await store.create_developer("keys")
    monkeypatch.setenv("MINT_DATABASE_URL", postgres_url)
    added = await asyncio.to_thread(CliRunner().invoke, cli, ["developer", "add-key", developer_id])
    assert added.exit_code == 0, added.output
    second = added.output.split("API key: ")[1].strip()

    async def status(key: str) -> int:
        async with httpx.AsyncClient(base_url=stack.url, headers={"Authorization": f"Bearer {key}"}) as api:
            return (await api.get("/agents")).status_code

    assert (await status(first), await status(second)) == (200, 200)
    revoked = await asyncio.to_thread(CliRunner().invoke, cli, ["developer", "revoke-key", first])
    assert revoked.exit_code == 0 and "revoked" in revoked.output
    assert (await status(first), await status(second)) == (401, 200)  # only the revoked key stops
    again = await asyncio.to_thread(CliRunner().invoke, cli, ["developer", "revoke-key", first])
    assert again.exit_code != 0 and "no live API key" in again.output


# mint run: answers, sleeps, Ctrl-C, versions -----------------------------------------------------------------


def _transition_lines(stdout: str) -> list[tuple[str, str]]:
    """(type, position) of each transition line the CLI printed."""
    kinds = "init|init_branch|step|wait|resume|finish|finish_branch|error|cancelled"
    return re.findall(rf"^({kinds}) +(\S+\[\d+\])", stdout, re.MULTILINE)


def _expected_lines(items: list[dict]) -> list[tuple[str, str]]:
    return [(t["type"], f"{t['current']['workflow']}[{t['current']['step']}]") for t in items]


async def test_run_reads_a_yaml_answer_and_asks_again_after_one_it_cannot_read(stack, api_key):
    result = await asyncio.to_thread(
        _mint,
        "run",
        str(EXAMPLES / "approval.yaml"),
        "--input",
        "{amount: 99, reason: chairs}",  # YAML here too
        "--url",
        stack.url,
        env={"MINT_API_KEY": api_key},
        stdin="approved: [true\napproved: true\n",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Expense of 99 for chairs. Approve?" in result.stdout  # what the wait asks, before the prompt
    assert "cannot read that: not JSON or YAML" in result.stderr
    assert '"decision": "approved"' in result.stdout
    # Every transition printed exactly once, in order.
    execution_id = re.search(r"execution (\S+)", result.stdout).group(1)
    async with _client(stack, api_key) as api:
        assert _transition_lines(result.stdout) == _expected_lines(await transitions(api, execution_id))


async def test_ctrl_c_leaves_the_execution_running_and_says_how_to_get_back(stack, api_key, tmp_path):
    task = tmp_path / "sleeps.yaml"
    task.write_text(SLEEPS)
    run = await asyncio.create_subprocess_exec(
        *as_foreground([*MINT, "run", str(task), "--url", stack.url]),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "MINT_API_KEY": api_key},
    )  # fmt: skip
    seen: list[str] = []
    try:
        await asyncio.wait_for(_read_until(run.stdout, "sleeping until", seen), timeout=120)
    except TimeoutError:
        run.kill()
        raise AssertionError(f"no 'sleeping until' in 120 s; printed {''.join(seen)!r}") from None
    execution_id = re.search(r"execution (\S+)", "".join(seen)).group(1)
    run.send_signal(signal.SIGINT)
    try:
        stdout, stderr = await asyncio.wait_for(run.communicate(), timeout=120)
    except TimeoutError:
        signals = _signals(run.pid)
        run.kill()
        raise AssertionError(f"still running 120 s after SIGINT; {signals}") from None
    assert run.returncode == 130, stderr
    said = stderr.decode()
    assert "Aborted" not in said and "Traceback" not in said
    assert f"execution {execution_id} goes on (running)" in said
    assert f"mint watch {execution_id}" in said and f"mint cancel {execution_id}" in said
    async with _client(stack, api_key) as api:
        assert (await api.get(f"/executions/{execution_id}")).json()["status"] == "running"
        await api.put(f"/executions/{execution_id}", json={"status": "cancelled"})


async def test_an_unchanged_task_file_keeps_its_version(stack, api_key, tmp_path):
    task = tmp_path / "same.yaml"
    task.write_text("name: same\nmain:\n- evaluate:\n    x: $ 1\n")

    async def version() -> str:
        result = await asyncio.to_thread(
            _mint, "run", str(task), "--url", stack.url, env={"MINT_API_KEY": api_key}
        )
        assert result.returncode == 0, result.stderr
        return re.search(r"\(version (\d+)\)", result.stdout).group(1)

    assert [await version(), await version()] == ["1", "1"]
    task.write_text("name: same\nmain:\n- evaluate:\n    x: $ 2\n")
    assert await version() == "2"


# ls, status, logs, resume, watch, cancel -----------------------------------------------------------------------


async def test_ls_status_resume_watch_and_logs(stack, api_key):
    async with _client(stack, api_key) as api:
        task = await create_task(api, (await create_agent(api))["id"], WAITS)
        execution_id = (await start(api, task["id"]))["id"]
        await wait_for_status(api, execution_id, {"awaiting_input"})
        env = {"MINT_API_KEY": api_key}

        listed = await _cli("ls", "--url", stack.url, env=env)
        assert re.search(rf"^{execution_id} +asks +awaiting_input ", listed, re.MULTILINE), listed
        assert execution_id not in await _cli("ls", "--status", "succeeded", "--url", stack.url, env=env)

        status = await _cli("status", execution_id, "--url", stack.url, env=env)
        assert "status     awaiting_input" in status and "task       asks" in status
        assert "waiting for input at main[1]" in status and '"question": "Ship it?"' in status

        resumed = await _cli("resume", execution_id, "--input", "shipped: yes", "--url", stack.url, env=env)
        assert f"resumed execution {execution_id}" in resumed
        watched = await asyncio.to_thread(_mint, "watch", execution_id, "--url", stack.url, env=env)
        assert watched.returncode == 0, watched.stderr
        items = await transitions(api, execution_id)
        assert _transition_lines(watched.stdout) == _expected_lines(items)  # each once, in order
        assert '"shipped": true' in watched.stdout

        logs = await _cli("logs", execution_id, "--url", stack.url, env=env)
        assert len(re.findall(r"^#\d+ ", logs, re.MULTILINE)) == len(items)
        assert '"question": "Ship it?"' in logs and '"shipped": true' in logs


async def test_status_shows_a_sleep_and_cancel_ends_it(stack, api_key):
    async with _client(stack, api_key) as api:
        task = await create_task(api, (await create_agent(api))["id"], SLEEPS)
        execution_id = (await start(api, task["id"]))["id"]
        await asyncio.wait_for(_until_sleeping(api, execution_id), timeout=60)
        env = {"MINT_API_KEY": api_key}

        status = await _cli("status", execution_id, "--url", stack.url, env=env)
        assert "status     running" in status and "sleeping   until" in status
        # A day's sleep, asked at once: "in 23h 59m", or "in 1d" when the CLI asks within half a second of its
        # start (the duration is rounded to the second).
        assert re.search(r"\(in (1d|23h \d+m)\)", status), status

        cancelled = await _cli("cancel", execution_id, "--reason", "not today", "--url", stack.url, env=env)
        assert f"execution {execution_id} cancelled" in cancelled
        assert (await api.get(f"/executions/{execution_id}")).json()["error"] == "cancelled: not today"
        watched = await asyncio.to_thread(_mint, "watch", execution_id, "--url", stack.url, env=env)
        assert watched.returncode == 2 and "cancelled" in watched.stdout


async def test_commands_say_in_one_line_what_is_wrong(stack, api_key):
    missing = await asyncio.to_thread(
        _mint,
        "status",
        "00000000-0000-0000-0000-000000000000",
        "--url",
        stack.url,
        env={"MINT_API_KEY": api_key},
    )
    assert missing.returncode == ExitCode.ERROR
    assert missing.stderr.strip() == (
        "Error: execution 00000000-0000-0000-0000-000000000000 not found (HTTP 404), "
        f"from the Mint API at {stack.url} (given by --url)"
    )
    down = await asyncio.to_thread(_mint, "ls", "--url", "http://127.0.0.1:9", env={"MINT_API_KEY": api_key})
    assert down.returncode == ExitCode.ERROR and len(down.stderr.strip().splitlines()) == 1, down.stderr
    assert "cannot reach the Mint API at http://127.0.0.1:9" in down.stderr


MINT = (sys.executable, "-m", "process.cli")


def _client(stack, api_key: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=stack.url, headers={"Authorization": f"Bearer {api_key}"}, timeout=30)


async def _cli(*args: str, env: dict[str, str]) -> str:
    result = await asyncio.to_thread(_mint, *args, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


async def _read_until(stream: asyncio.StreamReader, text: str, seen: list[str]) -> None:
    """Read lines into `seen` until one holds `text` (what was seen stays there if this is cut off)."""
    while not seen or text not in seen[-1]:
        line = await stream.readline()
        assert line, f"the output ended before {text!r}: {''.join(seen)}"
        seen.append(line.decode())


def _signals(pid: int) -> str:
    """The signal lines of /proc/PID/status (blocked, ignored, caught), for a process that ignored one."""
    try:
        with open(f"/proc/{pid}/status") as status:
            return " ".join(
                line.strip() for line in status if line.startswith(("SigBlk", "SigIgn", "SigCgt"))
            )
    except OSError:
        return "(gone)"


async def _until_sleeping(api: httpx.AsyncClient, execution_id: str) -> None:
    """Until the execution's timer is in its workflow's history (a sleep writes no transition as it starts)."""
    while not (await api.get(f"/executions/{execution_id}/timers")).json()["items"]:
        await asyncio.sleep(0.05)
