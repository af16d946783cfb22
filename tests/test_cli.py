"""The `mint` command: `run` shows progress and answers waits; `developer create` prints a working key."""

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import httpx

EXAMPLES = Path(__file__).parent.parent / "examples"


def _mint(*args: str, env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mint.process.cli", *args],
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

    from mint.process.cli import cli

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
