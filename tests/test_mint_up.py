"""`mint up` starts everything from an empty data dir, serves the API and the UI, and stops it all on Ctrl-C."""

import os
import signal
import subprocess
import sys
import time

import httpx

from tests.stack import free_port


def _wait_healthy(url: str, process: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stdout.read() if process.stdout else ""
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError("mint up did not become healthy")


def _check_the_ui_reveals_no_codec_credential(data_dir, url: str, ui_port: int) -> None:
    """Anyone who can load the Temporal UI can read its settings: nothing there may open the codec server."""
    settings = httpx.get(f"http://127.0.0.1:{ui_port}/api/v1/settings", timeout=10)
    assert settings.status_code == 200, settings.text
    assert (data_dir / "codec_token").read_text().strip() not in settings.text
    endpoint = settings.json().get("Codec", {}).get("Endpoint") or f"{url}/codec"
    refused = httpx.post(f"{endpoint}/decode", json={"payloads": []}, timeout=10)
    assert refused.status_code == 401, refused.text


def test_mint_up_serves_and_stops_cleanly(tmp_path):
    api_port, temporal_port, ui_port = free_port(), free_port(), free_port()
    env = {**os.environ, "MINT_API_PORT": str(api_port), "MINT_API_KEY": "mint_test_key_for_up"}
    for name in ("MINT_DATABASE_URL", "TEMPORAL_ADDRESS"):
        env.pop(name, None)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mint.cli",
            "up",
            "--data-dir",
            str(tmp_path / "data"),
            "--temporal-port",
            str(temporal_port),
            "--ui-port",
            str(ui_port),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{api_port}"
    try:
        _wait_healthy(url, process)
        headers = {"Authorization": "Bearer mint_test_key_for_up"}
        created = httpx.post(f"{url}/agents", json={"name": "from-up"}, headers=headers)
        assert created.status_code == 201, created.text
        assert httpx.get(f"http://127.0.0.1:{ui_port}/", timeout=10).status_code == 200  # the Temporal UI
        _check_the_ui_reveals_no_codec_credential(tmp_path / "data", url, ui_port)
    finally:
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=60)
    assert process.returncode == 0, output
    assert "Mint stopped." in output and "mint_test_key_for_up" in output
    # How the operator sees payloads: a sign-in page and the codec URL, but never the token itself.
    assert f"{url}/codec/sign-in" in output and str(tmp_path / "data" / "codec_token") in output
    assert (tmp_path / "data" / "codec_token").read_text().strip() not in output
    leftovers = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True).stdout
    assert leftovers == "", f"processes left running: {leftovers}"
