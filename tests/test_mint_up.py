"""`mint up` starts everything from an empty data dir, serves the API and the UI, and stops it all on Ctrl-C."""

import os
import signal
import subprocess
import time

import httpx

from tests.stack import MintUp


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
        ["pgrep", "-f", f"mint.process.cli worker --data-dir {up.data_dir}"], capture_output=True, text=True
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
