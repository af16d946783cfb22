"""`mint up` starts everything from an empty data dir, serves the API and the UI, and stops it all on Ctrl-C."""

import signal

import httpx

from tests.stack import MintUp


def test_mint_up_serves_and_stops_cleanly(tmp_path):
    up = MintUp(tmp_path / "data")
    try:
        up.start()
        headers = {"Authorization": f"Bearer {up.key}"}
        created = httpx.post(f"{up.url}/agents", json={"name": "from-up"}, headers=headers)
        assert created.status_code == 201, created.text
        assert httpx.get(f"http://127.0.0.1:{up.ui_port}/", timeout=10).status_code == 200  # the Temporal UI
    finally:
        code, output = up.stop(signal.SIGINT)
    assert code == 0, output
    assert "Mint stopped." in output and up.key in output
    assert up.leftovers() == "", f"processes left running: {up.leftovers()}"
