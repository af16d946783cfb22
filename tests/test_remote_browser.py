"""`remote_browser` (activities/integrations/remote_browser.py) against a fake browser that speaks CDP
(tests/cdp_fake.py): the exact commands each action sends and Julep's answer; where the browser is (setup's or
the call's connect_url, else MINT_REMOTE_BROWSER_BASE_URL, else a clear error); the egress check on a task's
connect_url and navigate URLs, and the connection pinned to the address checked; bad arguments refused before
any connection. Then the provider through the real stack, as tests/test_integrations_more.py drives the
others."""

from __future__ import annotations

import asyncio
import base64
import re
from collections.abc import Iterator
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from activities.egress import Destination, EgressPolicy
from activities.integrations import Service, remote_browser
from activities.integrations.remote_browser import READ_CURSOR
from tests.cdp_fake import LOAD_DELAY, PNG, FakeBrowser
from tests.helpers import create_agent, run_task
from tests.stack import free_port
from tests.test_integrations import _no_http, _task
from workflows.integrations import arguments_schema

ALLOWED = EgressPolicy(("127.0.0.1",))  # the fake listens on loopback, which only this allows
SESSION = "session-page-1"
ATTACH = [
    ("Target.getTargets", {}, None),
    ("Target.attachToTarget", {"targetId": "page-1", "flatten": True}, None),
    ("Page.enable", {}, SESSION),
]
CENTRE = ("Runtime.evaluate", {"expression": READ_CURSOR, "returnByValue": True}, SESSION)


@pytest.fixture
def browser() -> Iterator[FakeBrowser]:
    fake = FakeBrowser()
    yield fake
    fake.close()


async def perform(
    browser: FakeBrowser | None,
    arguments: dict[str, Any],
    setup: dict[str, Any] | None = None,
    egress: EgressPolicy = ALLOWED,
    operator: str = "",
    deadline: float = 10,
) -> Any:
    """The provider's answer to one call, the browser named by the call's connect_url (as Julep's cookbook
    does) unless `browser` is None."""
    service = Service(operator, _no_http, egress, deadline=deadline, key="k")
    where = {"connect_url": browser.url} if browser else {}
    return await remote_browser.call(service, "perform_action", setup or {}, {**where, **arguments})


async def refused(arguments: dict[str, Any], **more: Any) -> ApplicationError:
    browser = more.pop("browser", None)
    with pytest.raises(ApplicationError) as raised:
        await perform(browser, arguments, **more)
    return raised.value


def mouse(kind: str, x: int, y: int, button: str = "none", buttons: int = 0, clicks: int = 0) -> tuple:
    params = {"type": kind, "x": x, "y": y, "button": button, "buttons": buttons, "clickCount": clicks}
    return ("Input.dispatchMouseEvent", params, SESSION)


def key(kind: str, name: str, code: str, number: int, modifiers: int = 0, text: str = "") -> tuple:
    params: dict[str, Any] = {
        "type": kind,
        "key": name,
        "code": code,
        "windowsVirtualKeyCode": number,
        "modifiers": modifiers,
    }
    if text:
        params.update(text=text, unmodifiedText=text)
    return ("Input.dispatchKeyEvent", params, SESSION)


def answer(output: Any = None, **more: Any) -> dict[str, Any]:
    return {"output": output, "error": None, "base64_image": None, "system": None, **more}


def set_cursor(x: int, y: int) -> tuple:
    return (
        "Runtime.evaluate",
        {"expression": f"window.__mintCursor = [{x}, {y}]", "returnByValue": True},
        SESSION,
    )


SCREENSHOT = f"data:image/png;base64,{base64.b64encode(PNG).decode()}"
ACTIONS = [
    (
        {"action": "navigate", "text": "http://127.0.0.1:9/page"},
        [("Page.navigate", {"url": "http://127.0.0.1:9/page"}, SESSION)],
        answer("http://127.0.0.1:9/page"),
    ),
    ({"action": "refresh"}, [("Page.reload", {}, SESSION)], answer("Refreshed page")),
    (
        {"action": "screenshot"},
        [("Page.captureScreenshot", {"format": "png"}, SESSION)],
        answer(base64_image=SCREENSHOT, system="take_screenshot"),
    ),
    ({"action": "cursor_position"}, [CENTRE], answer("X=400, Y=300")),
    (
        {"action": "mouse_move", "coordinate": [10, 20]},
        [mouse("mouseMoved", 10, 20), set_cursor(10, 20)],
        answer("Moved mouse to [10, 20]"),
    ),
    (
        {"action": "left_click"},
        [
            CENTRE,
            mouse("mousePressed", 400, 300, "left", 1, 1),
            mouse("mouseReleased", 400, 300, "left", 0, 1),
        ],
        answer("Left clicked"),
    ),
    (
        {"action": "right_click"},
        [
            CENTRE,
            mouse("mousePressed", 400, 300, "right", 2, 1),
            mouse("mouseReleased", 400, 300, "right", 0, 1),
        ],
        answer("Right clicked"),
    ),
    (
        {"action": "middle_click"},
        [
            CENTRE,
            mouse("mousePressed", 400, 300, "middle", 4, 1),
            mouse("mouseReleased", 400, 300, "middle", 0, 1),
        ],
        answer("Middle clicked"),
    ),
    (
        {"action": "double_click"},
        [
            CENTRE,
            mouse("mousePressed", 400, 300, "left", 1, 1),
            mouse("mouseReleased", 400, 300, "left", 0, 1),
            mouse("mousePressed", 400, 300, "left", 1, 2),
            mouse("mouseReleased", 400, 300, "left", 0, 2),
        ],
        answer("Double clicked"),
    ),
    (
        {"action": "left_click", "coordinate": [7, 8]},
        [
            mouse("mouseMoved", 7, 8),
            set_cursor(7, 8),
            mouse("mousePressed", 7, 8, "left", 1, 1),
            mouse("mouseReleased", 7, 8, "left", 0, 1),
        ],
        answer("Left clicked"),
    ),
    (
        {"action": "left_click_drag", "coordinate": [50, 60]},
        [
            CENTRE,
            mouse("mousePressed", 400, 300, "left", 1, 1),
            mouse("mouseMoved", 50, 60, "left", 1),
            set_cursor(50, 60),
            mouse("mouseReleased", 50, 60, "left", 0, 1),
        ],
        answer("Left clicked and dragged to [50, 60]"),
    ),
    (
        {"action": "type", "text": "hello\nworld"},
        [
            ("Input.insertText", {"text": "hello"}, SESSION),
            key("keyDown", "Enter", "Enter", 13, text="\r"),
            key("keyUp", "Enter", "Enter", 13),
            ("Input.insertText", {"text": "world"}, SESSION),
        ],
        answer("Typed hello\nworld"),
    ),
    (
        {"action": "key", "text": "Return"},
        [key("keyDown", "Enter", "Enter", 13, text="\r"), key("keyUp", "Enter", "Enter", 13)],
        answer("Pressed Return"),
    ),
    (
        {"action": "key", "text": "ctrl+a"},
        [
            key("rawKeyDown", "Control", "ControlLeft", 17, 2),
            key("rawKeyDown", "a", "KeyA", 65, 2),
            key("keyUp", "a", "KeyA", 65, 2),
            key("keyUp", "Control", "ControlLeft", 17, 0),
        ],
        answer("Pressed ctrl+a"),
    ),
    (
        {"action": "key", "text": "shift+b Page_Down"},
        [
            key("rawKeyDown", "Shift", "ShiftLeft", 16, 8),
            key("keyDown", "B", "KeyB", 66, 8, text="B"),
            key("keyUp", "B", "KeyB", 66, 8),
            key("keyUp", "Shift", "ShiftLeft", 16, 0),
            key("rawKeyDown", "PageDown", "PageDown", 34),
            key("keyUp", "PageDown", "PageDown", 34),
        ],
        answer("Pressed shift+b Page_Down"),
    ),
]


@pytest.mark.parametrize(
    ("arguments", "sent", "expected"), ACTIONS, ids=[" ".join(map(str, a[0].values())) for a in ACTIONS]
)
async def test_each_action_sends_its_cdp_commands_and_answers_as_julep(arguments, sent, expected, browser):
    assert await perform(browser, arguments) == expected
    assert browser.commands() == ATTACH + sent


async def test_the_cursor_lives_in_the_page_across_calls_and_a_navigation_recentres_it(browser):
    await perform(browser, {"action": "mouse_move", "coordinate": [10, 20]})
    assert await perform(browser, {"action": "cursor_position"}) == answer("X=10, Y=20")
    before = len(browser.received)
    assert await perform(browser, {"action": "left_click"}) == answer("Left clicked")
    assert browser.commands()[before + len(ATTACH) :] == [
        CENTRE,
        mouse("mousePressed", 10, 20, "left", 1, 1),
        mouse("mouseReleased", 10, 20, "left", 0, 1),
    ]
    await perform(browser, {"action": "navigate", "text": "http://127.0.0.1:9/next"})
    assert await perform(browser, {"action": "cursor_position"}) == answer("X=400, Y=300")


async def test_setup_width_and_height_set_the_viewport_on_every_call_and_bound_the_coordinate(browser):
    setup = {"width": 1024, "height": 768}
    assert await perform(browser, {"action": "cursor_position"}, setup) == answer("X=512, Y=384")
    metrics = {"width": 1024, "height": 768, "deviceScaleFactor": 1, "mobile": False}
    assert browser.commands() == [*ATTACH, ("Emulation.setDeviceMetricsOverride", metrics, SESSION), CENTRE]
    moved = await perform(browser, {"action": "mouse_move", "coordinate": [1023, 767]}, setup)
    assert moved == answer("Moved mouse to [1023, 767]")
    error = await refused({"action": "mouse_move", "coordinate": [1024, 0]}, setup=setup, browser=browser)
    assert error.type == "BadToolCall" and "`coordinate` [1024, 0] is outside the 1024x768 browser" in str(
        error
    )


async def test_navigate_waits_for_its_pages_load_event_and_no_other(browser):
    started = asyncio.get_running_loop().time()
    url = "http://127.0.0.1:9/slow-load"
    assert await perform(browser, {"action": "navigate", "text": url}) == answer(url)
    assert asyncio.get_running_loop().time() - started >= LOAD_DELAY  # (another session's load came at once)
    early = "http://127.0.0.1:9/early-load"  # the load event before the command's answer
    assert await perform(browser, {"action": "navigate", "text": early}, deadline=3) == answer(early)


async def test_a_page_that_never_loads_fails_at_the_deadline_and_may_be_retried(browser):
    error = await refused(
        {"action": "navigate", "text": "http://127.0.0.1:9/never-loads"}, browser=browser, deadline=1
    )
    assert error.type == "IntegrationTimeout" and not error.non_retryable
    assert "the page's load event" in str(error)


async def test_the_browsers_errors_are_permanent_and_named(browser):
    arguments = {"action": "navigate", "text": "http://unreachable.example/"}
    error = await refused(arguments, browser=browser, egress=Public(browser.port))
    assert error.type == "NavigationFailed" and error.non_retryable
    assert "net::ERR_NAME_NOT_RESOLVED" in str(error)
    browser.refuse.add("Page.captureScreenshot")
    error = await refused({"action": "screenshot"}, browser=browser)
    assert error.type == "BrowserRefused" and error.non_retryable
    assert "the browser refused Page.captureScreenshot: 'Page.captureScreenshot' wasn't found" in str(error)


async def test_a_screenshot_over_the_cap_is_refused(browser, monkeypatch):
    monkeypatch.setattr(remote_browser, "MAX_SCREENSHOT_BYTES", 3000)
    browser.screenshot = base64.b64encode(b"x" * 4000).decode()  # over the cap, within the message size
    error = await refused({"action": "screenshot"}, browser=browser)
    assert error.type == "ResponseTooLarge" and error.non_retryable
    browser.screenshot = base64.b64encode(b"x" * 100_000).decode()  # over the websocket's message size too
    error = await refused({"action": "screenshot"}, browser=browser)
    assert error.type == "ResponseTooLarge" and error.non_retryable


async def test_only_web_pages_are_taken_over(browser):
    browser.targets = [
        {"targetId": "worker-1", "type": "service_worker", "url": "https://example.com/sw.js"},
        {"targetId": "files-1", "type": "page", "url": "file:///etc/"},
        {"targetId": "settings-1", "type": "page", "url": "chrome://settings/"},
    ]
    assert await perform(browser, {"action": "refresh"}) == answer("Refreshed page")
    assert browser.commands()[:3] == [
        ("Target.getTargets", {}, None),
        ("Target.createTarget", {"url": "about:blank"}, None),
        ("Target.attachToTarget", {"targetId": "page-4", "flatten": True}, None),
    ]
    browser.received.clear()
    browser.targets.insert(0, {"targetId": "web-1", "type": "page", "url": "https://example.com/"})
    await perform(browser, {"action": "refresh"})
    assert browser.commands()[1] == ("Target.attachToTarget", {"targetId": "web-1", "flatten": True}, None)


# --- where the browser is, and the egress check ------------------------------------------------------------


class Public(EgressPolicy):
    """Every name is a public address, and connections go to the fake: the test sees what was checked."""

    def __init__(self, port: int = 0):
        super().__init__()
        self.port, self.checked = port, []

    async def resolve(self, url: str, quote: bool = True) -> Destination:
        self.checked.append(url)
        return Destination("http", "browser.example", self.port, "127.0.0.1")


async def test_a_task_connect_url_on_a_private_address_is_refused_unless_the_operator_allows_it(browser):
    error = await refused({"action": "screenshot"}, browser=browser, egress=EgressPolicy())
    assert error.type == "EgressRefused" and error.non_retryable
    assert "resolves to 127.0.0.1, which is not a public address; list it in MINT_EGRESS_ALLOW" in str(error)
    assert browser.hosts == []  # never reached
    allowed = await perform(browser, {"action": "screenshot"}, egress=EgressPolicy(("127.0.0.1",)))
    assert allowed["system"] == "take_screenshot" and len(browser.hosts) == 1


async def test_the_connection_goes_to_the_checked_address_with_the_urls_host(browser):
    egress = Public(browser.port)
    url = f"ws://browser.example:{browser.port}/devtools/browser/x?signingKey=k"
    assert await perform(None, {"action": "refresh", "connect_url": url}, egress=egress)
    assert egress.checked == [f"http://browser.example:{browser.port}/devtools/browser/x?signingKey=k"]
    assert browser.hosts == [f"browser.example:{browser.port}"]
    with pytest.raises(ApplicationError):  # (wss: checked as https; the fake speaks no TLS)
        await perform(None, {"action": "refresh", "connect_url": "wss://browser.example/s"}, egress=egress)
    assert egress.checked[-1] == "https://browser.example/s"


async def test_a_navigate_url_passes_the_egress_check_before_any_connection(browser):
    error = await refused({"action": "navigate", "text": "http://10.0.0.7/admin"}, browser=browser)
    assert error.type == "EgressRefused" and "10.0.0.7, which is not a public address" in str(error)
    assert browser.hosts == []


async def test_the_setups_connect_url_comes_before_the_calls_as_in_julep(browser):
    setup = {"connect_url": browser.url}
    arguments = {"action": "refresh", "connect_url": "ws://10.9.9.9:1/elsewhere"}
    assert await perform(None, arguments, setup) == answer("Refreshed page")


async def test_without_a_connect_url_the_operators_browser_is_used_and_trusted(browser):
    nothing_allowed = EgressPolicy()
    assert await perform(None, {"action": "refresh"}, egress=nothing_allowed, operator=browser.url)
    assert len(browser.hosts) == 1
    error = await refused({"action": "refresh"}, egress=nothing_allowed, operator="http://127.0.0.1:9222")
    assert error.type == "BadToolCall" and "MINT_REMOTE_BROWSER_BASE_URL must be a ws:// or wss://" in str(
        error
    )


async def test_with_no_browser_at_all_the_error_says_how_to_configure_one():
    error = await refused({"action": "screenshot"})
    assert error.type == "BadToolCall" and error.non_retryable
    assert "no browser is configured" in str(error) and "MINT_REMOTE_BROWSER_BASE_URL" in str(error)


async def test_a_browser_that_refuses_or_is_not_there(browser):
    browser.reject = 403
    error = await refused({"action": "refresh"}, browser=browser)
    assert (error.type, error.non_retryable) == ("BrowserRefused", True)
    assert "the browser refused the connection (403)" in str(error)
    browser.reject = 503
    assert (await refused({"action": "refresh"}, browser=browser)).non_retryable is False
    closed = f"ws://127.0.0.1:{free_port()}/devtools/browser/x"
    error = await refused({"action": "refresh", "connect_url": closed})
    assert (error.type, error.non_retryable) == ("BrowserUnavailable", False)


# --- bad arguments: refused before any connection ----------------------------------------------------------

BAD = [
    ({"action": "scroll"}, {}, r"`action` must be one of key, type, mouse_move, .*refresh, not 'scroll'"),
    ({}, {}, r"`action` must be one of .*, not None"),
    ({"action": "type"}, {}, r"the type action needs `text`"),
    ({"action": "key", "text": ""}, {}, r"the key action needs `text`"),
    ({"action": "key", "text": "ctrl+Hyper_L"}, {}, r"unknown key 'Hyper_L'"),
    ({"action": "navigate"}, {}, r"the navigate action needs `text`: the URL to open"),
    ({"action": "navigate", "text": "file:///etc/passwd"}, {}, r"navigate takes an http or https URL"),
    ({"action": "navigate", "text": "javascript:alert(document.cookie)"}, {}, r"http or https URL"),
    ({"action": "navigate", "text": "chrome://settings"}, {}, r"http or https URL"),
    ({"action": "navigate", "text": "data:text/html,<b>hi</b>"}, {}, r"http or https URL"),
    ({"action": "navigate", "text": "view-source:http://a.example/"}, {}, r"http or https URL"),
    ({"action": "navigate", "text": "http:///nohost"}, {}, r"http or https URL"),
    ({"action": "type", "text": "x" * 20_001}, {}, r"`text` is longer than 20000 characters"),
    ({"action": "mouse_move"}, {}, r"the mouse_move action needs `coordinate`: \[x, y\]"),
    ({"action": "left_click_drag", "coordinate": None}, {}, r"needs `coordinate`"),
    ({"action": "mouse_move", "coordinate": [1, 2, 3]}, {}, r"`coordinate` must be \[x, y\]"),
    ({"action": "mouse_move", "coordinate": [-1, 5]}, {}, r"two whole numbers of at least 0"),
    ({"action": "mouse_move", "coordinate": [1.5, 2]}, {}, r"two whole numbers"),
    ({"action": "mouse_move", "coordinate": [True, 2]}, {}, r"two whole numbers"),
    ({"action": "mouse_move", "coordinate": "10,20"}, {}, r"`coordinate` must be \[x, y\]"),
    ({"action": "left_click", "coordinate": [70_000, 1]}, {}, r"outside the 65536x65536 browser"),
    ({"action": "screenshot"}, {"width": "big", "height": 768}, r"setup.width must be a whole number"),
    ({"action": "screenshot"}, {"width": 1024, "height": 0}, r"setup.height must be a whole number from 1"),
    ({"action": "screenshot"}, {"width": 10_000, "height": 10}, r"from 1 to 8192, not 10000"),
    ({"action": "screenshot", "connect_url": "http://127.0.0.1:9222"}, {}, r"`connect_url` must be a ws://"),
    ({"action": "screenshot", "connect_url": "file:///tmp/x"}, {}, r"`connect_url` must be a ws://"),
]


@pytest.mark.parametrize(
    ("arguments", "setup", "message"), BAD, ids=[str([*a.values(), *s.values()])[:50] for a, s, _ in BAD]
)
async def test_bad_arguments_are_refused_naming_the_problem_before_connecting(
    arguments, setup, message, browser
):
    with pytest.raises(ApplicationError) as raised:
        await perform(browser, arguments, setup)  # (the call's own connect_url replaces the fake's)
    assert raised.value.type == "BadToolCall" and raised.value.non_retryable
    assert re.search(message, str(raised.value)), str(raised.value)
    assert browser.hosts == []


def test_a_model_offered_the_tool_sees_the_actions_and_the_coordinates_shape():
    schema = arguments_schema({"provider": "remote_browser", "method": "perform_action"})
    assert schema is not None and schema["required"] == ["action"]
    assert schema["properties"]["action"]["enum"][:3] == ["key", "type", "mouse_move"]
    assert (
        schema["properties"]["coordinate"]["minItems"] == schema["properties"]["coordinate"]["maxItems"] == 2
    )


# --- through the real stack --------------------------------------------------------------------------------


async def test_a_task_drives_the_browser_through_the_stack(mapi, browser):
    tool = {
        "provider": "remote_browser",
        "method": "perform_action",
        "setup": {"width": 1024, "height": 768},
    }
    steps = [
        {"action": "navigate", "text": "http://127.0.0.1:9/start"},
        {"action": "mouse_move", "coordinate": [100, 200]},
        {"action": "left_click"},
        {"action": "cursor_position"},
        {"action": "screenshot"},
    ]
    task = {
        "name": "browse",
        "tools": [{"name": "browser", "type": "integration", "integration": tool}],
        "main": [
            *({"tool": "browser", "arguments": {"connect_url": browser.url, **step}} for step in steps),
            {"return": {"all": "$ [steps[i].output for i in range(5)]"}},
        ],
    }
    execution, _ = await run_task(mapi, task)
    assert execution["status"] == "succeeded", execution["error"]
    assert execution["output"]["all"] == [
        answer("http://127.0.0.1:9/start"),
        answer("Moved mouse to [100, 200]"),
        answer("Left clicked"),
        answer("X=100, Y=200"),
        answer(base64_image=SCREENSHOT, system="take_screenshot"),
    ]
    clicks = [c for c in browser.commands() if c[0] == "Input.dispatchMouseEvent"]
    assert clicks[1:] == [
        mouse("mousePressed", 100, 200, "left", 1, 1),
        mouse("mouseReleased", 100, 200, "left", 0, 1),
    ]


async def test_through_the_stack_without_a_browser_the_step_fails_saying_how_to_configure_one(mapi):
    execution, _ = await run_task(mapi, _task({"provider": "remote_browser"}, {"action": "screenshot"}))
    assert execution["status"] == "failed"
    assert "no browser is configured" in execution["error"], execution["error"]
    assert "MINT_REMOTE_BROWSER_BASE_URL" in execution["error"]


@pytest.mark.parametrize(
    ("integration", "arguments", "path", "message"),
    [
        (
            {"provider": "remote_browser", "setup": {"api_key": "k"}},
            {"action": "screenshot"},
            "tools[0].integration",
            r"provider 'remote_browser' has no setup field 'api_key' \(it takes connect_url, width, height\)",
        ),
        (
            {"provider": "remote_browser", "method": "perform_action"},
            {"action": "navigate", "url": "http://a.example/"},
            "main[0].arguments",
            r"method 'perform_action' takes no argument 'url' \(it takes action, connect_url, text, coordinate\)",
        ),
        (
            {"provider": "remote_browser", "method": "browse"},
            {"action": "screenshot"},
            "tools[0].integration",
            r"provider 'remote_browser' has no method 'browse'.*\(perform_action\)",
        ),
    ],
)
async def test_a_remote_browser_tool_is_checked_when_the_task_is_created(
    integration, arguments, path, message, mapi
):
    agent = await create_agent(mapi)
    response = await mapi.post(f"/agents/{agent['id']}/tasks", json=_task(integration, arguments))
    assert response.status_code == 422, response.text
    problems = {p["loc"]: p["msg"] for p in response.json()["error"]["details"]}
    assert re.search(message, problems.get(path, "")), problems
