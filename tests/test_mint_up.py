"""`mint up` starts everything from an empty data dir, serves the API and the UI, and stops it all on Ctrl-C."""

import signal

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
