"""`mint up`'s Temporal UI, in a real browser (Debian's Chromium, driven by Playwright): the operator who
opens the sign-in link `mint up` printed sees an execution's input, result and steps decoded; a browser that
did not sign in sees ciphertext; the link works once and leaks nowhere. Its screenshots are the ones
docs/temporal-ui.md shows: `MINT_SCREENSHOTS=docs pytest tests/test_temporal_ui_browser.py` writes them into
docs/images/; any other run keeps them in the test's own directory, so the suite leaves the tree as it was."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from tests.stack import MintUp

CHROMIUM = Path("/usr/bin/chromium")
DOCS_IMAGES = Path(__file__).resolve().parents[1] / "docs" / "images"

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="needs Debian's Chromium (apt-get install chromium)"
)

TASK = {
    "name": "release review",
    "main": [
        {
            "label": "draft",
            "evaluate": {"summary": "$ f\"Release {inputs[0]['release']}: {inputs[0]['change']}\""},
        },
        {"label": "settle", "sleep": {"seconds": 1}},
        {"label": "decide", "return": {"decision": "$ steps['draft'].output['summary'] + ' is approved'"}},
    ],
}
INPUT = {"release": 42, "change": "the parser fix"}
RESULT = "Release 42: the parser fix is approved"
STEP = 'main[1] "settle"'  # the sleep's timer, as its summary names it


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the screenshots go (the module docstring says when that is docs/images/)."""
    if os.environ.get("MINT_SCREENSHOTS") == "docs":
        return DOCS_IMAGES
    return tmp_path_factory.mktemp("screenshots")


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MintUp]:
    up = MintUp(tmp_path_factory.mktemp("ui") / "data")
    try:
        yield up.start()
    finally:
        up.stop()
        up.kill()


@pytest.fixture(scope="module")
def execution_id(up: MintUp) -> str:
    headers = {"Authorization": f"Bearer {up.key}"}
    with httpx.Client(base_url=up.url, headers=headers, timeout=30) as api:
        agent = api.post("/agents", json={"name": "Release Manager"}).json()
        task = api.post(f"/agents/{agent['id']}/tasks", json=TASK).json()
        started = api.post(f"/tasks/{task['id']}/executions", json={"input": INPUT}).json()
        deadline = time.monotonic() + 120
        while (execution := api.get(f"/executions/{started['id']}").json())["status"] not in (
            "succeeded",
            "failed",
        ):
            assert time.monotonic() < deadline, execution
            time.sleep(0.3)
    assert execution["output"] == {"decision": RESULT}, execution
    return str(started["id"])


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    flags = [
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ]
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", *flags, "--no-first-run"]
        )
        yield chromium
        chromium.close()


def _sign_in_link(up: MintUp) -> str:
    found = re.search(rf"http://127\.0\.0\.1:{up.ui_port}/codec/sign-in#(\S+)", up.output())
    assert found, up.output()
    return found.group(0)


def _open_execution(page: Page, up: MintUp, execution_id: str) -> int:
    """Open the execution in the UI; the status of the UI's first call to the codec server."""
    with page.expect_response(lambda answer: "/codec/decode" in answer.url, timeout=60_000) as first:
        page.goto(f"http://127.0.0.1:{up.ui_port}/namespaces/default/workflows/{execution_id}")
    page.get_by_text("Result", exact=True).filter(visible=True).first.wait_for(timeout=60_000)
    return first.value.status


def test_a_browser_that_did_not_sign_in_sees_no_plaintext(up, execution_id, browser, images):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    assert _open_execution(page, up, execution_id) == 401
    page.wait_for_timeout(3000)  # every codec call it makes is refused alike
    shown = page.content()
    for plain in (RESULT, INPUT["change"], "Release Manager", STEP):
        assert plain not in shown
    page.screenshot(path=images / "temporal-ui-signed-out.png")
    page.close()


def test_the_operator_signs_in_once_with_the_link_and_sees_the_execution_decoded(
    up, execution_id, browser, images
):
    link = _sign_in_link(up)
    code = link.partition("#")[2]
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    with page.expect_response(lambda answer: answer.request.method == "GET") as sign_in_page:
        page.goto(link)
    page.wait_for_url(f"http://127.0.0.1:{up.ui_port}/**")
    assert sign_in_page.value.headers["referrer-policy"] == "no-referrer"
    assert "script-src 'nonce-" in sign_in_page.value.headers["content-security-policy"]
    (cookie,) = context.cookies()
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/codec"
    assert code not in page.url and code not in cookie["value"]

    assert _open_execution(page, up, execution_id) == 200
    page.get_by_text(RESULT).first.wait_for(timeout=60_000)
    page.get_by_text(INPUT["change"]).first.wait_for()
    page.screenshot(path=images / "temporal-ui-decoded.png")
    step = page.get_by_text(STEP).first
    step.wait_for(timeout=60_000)
    step.scroll_into_view_if_needed()
    box = step.bounding_box()
    assert box is not None
    timeline = {"x": 260, "y": max(0, box["y"] - 140), "width": 1120, "height": 260}
    page.screenshot(path=images / "temporal-ui-timeline.png", clip=timeline)
    context.close()

    # The link signs in one browser: a second use is refused, and it sets no session.
    other = browser.new_context()
    again = other.new_page()
    again.goto(link)
    again.get_by_text("This sign-in link is used up").wait_for()
    assert other.cookies() == []
    other.close()
    # The code never reached a server's log or a URL it served: the one line `mint up` printed holds it.
    assert up.output().count(code) == 1


def test_the_ui_answers_only_to_its_own_names(up):
    """A page whose host name resolves to this machine (DNS rebinding) cannot drive the UI through its port."""
    ui = f"http://127.0.0.1:{up.ui_port}"
    assert httpx.get(f"{ui}/api/v1/settings", timeout=10).status_code == 200
    for host in (f"rebound.example:{up.ui_port}", "127.0.0.1"):
        assert httpx.get(f"{ui}/api/v1/settings", headers={"Host": host}, timeout=10).status_code == 421
