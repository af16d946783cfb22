"""`remote_browser`: Julep's perform_action, driving a browser over the Chrome DevTools Protocol (CDP) with
`websockets`, one connection per call, on the browser's first web page (else a new one), attached with
`flatten`; answering Julep's {output, error, base64_image, system}. Keys are xdotool's names (`Return`,
`ctrl+a`), as Anthropic's computer-use tool writes them. A screenshot is a PNG data URL (Julep draws the cursor
on it; Mint does not). The clicks are at the cursor, or at `coordinate` when given (Julep ignores it there).

The browser is setup.connect_url, else the call's (Julep's order), such as a browserbase session's: tenant
input, it passes the egress check every HTTP tool passes, and the connection goes to exactly the address
checked. So does a navigate URL (so a task cannot name the worker's network; the browser resolves it again,
and a page may link there). Failing both, the operator's (trusted) MINT_REMOTE_BROWSER_BASE_URL.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypedDict, TypeGuard, TypeVar
from urllib.parse import urlsplit, urlunsplit

from temporalio.exceptions import ApplicationError
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI

from activities.egress import EgressPolicy, EgressRefused, brief_repr
from activities.integrations.common import BrowserAnswer as Answer
from activities.integrations.common import Service
from activities.integrations.remote_browser_keys import MODIFIERS, combinations, key_event
from contracts.json import JsonObject, JsonValue
from infra.temporal import errors
from workflows.integrations import REMOTE_BROWSER_ACTIONS

DEFAULT_BASE_URL = ""  # no browser unless the operator sets MINT_REMOTE_BROWSER_BASE_URL
METHODS = ("perform_action",)
MAX_SIDE = 8192  # setup.width and height
MAX_COORDINATE = 65535  # Julep's uint16, when setup gives no width and height
MAX_TEXT_CHARS = 20_000
MAX_SCREENSHOT_BYTES = 5 * 1024 * 1024  # the PNG (its base64 is the step's output)
TOO_LARGE = f"the browser's answer is over {MAX_SCREENSHOT_BYTES} bytes: set a smaller width and height"
CURSOR = "window.__mintCursor"
READ_CURSOR = f"(c => Array.isArray(c) && c.length === 2 ? c : [innerWidth >> 1, innerHeight >> 1])({CURSOR})"
BUTTONS = {"none": 0, "left": 1, "right": 2, "middle": 4}
T = TypeVar("T")


@dataclass(frozen=True)
class Action:
    name: str
    text: str
    coordinate: tuple[int, int] | None
    viewport: tuple[int, int] | None  # setup.width, setup.height


async def call(service: Service, method: str, setup: JsonObject, arguments: JsonObject) -> Answer:
    """perform_action (the only method): the action done in the browser, answered as Julep answers it."""
    action = _action(setup, arguments)
    url, trusted = _browser_url(setup, arguments, service.base_url)
    page = Page(asyncio.get_running_loop().time() + service.deadline)
    if action.name == "navigate":
        try:
            await page.bounded(service.egress.resolve(action.text, quote=False), "resolving the URL")
        except EgressRefused as exc:
            raise errors.permanent(f"remote_browser cannot navigate there: {exc}", "EgressRefused") from None
    try:
        await page.open(url, None if trusted else service.egress)
        await page.attach(action.viewport)
        return await page.perform(action)
    except (ConnectionClosed, InvalidHandshake, InvalidURI, OSError) as exc:
        raise _connection_error(exc) from None
    finally:
        page.close()


def _action(setup: JsonObject, arguments: JsonObject) -> Action:
    """The call's action, checked: a BadToolCall names what is wrong before any connection is made."""
    name, text = arguments.get("action"), arguments.get("text")
    if name not in REMOTE_BROWSER_ACTIONS:
        raise _bad(f"`action` must be one of {', '.join(REMOTE_BROWSER_ACTIONS)}, not {brief_repr(name)}")
    if name in ("key", "type", "navigate") and (not isinstance(text, str) or not text):
        raise _bad(f"the {name} action needs `text`" + (": the URL to open" if name == "navigate" else ""))
    text = text if isinstance(text, str) else ""
    if len(text) > MAX_TEXT_CHARS:
        raise _bad(f"`text` is longer than {MAX_TEXT_CHARS} characters")
    # Web pages only: file:, javascript:, data: or chrome: URLs reach the browser's machine or run scripts.
    if name == "navigate" and (urlsplit(text).scheme not in ("http", "https") or not urlsplit(text).hostname):
        raise _bad(f"navigate takes an http or https URL (in `text`), not {brief_repr(text)}")
    if name == "key":
        combinations(text)  # (every key name known before the first goes down)
    if (raw := arguments.get("coordinate")) is None and name in ("mouse_move", "left_click_drag"):
        raise _bad(f"the {name} action needs `coordinate`: [x, y]")
    viewport = _viewport(setup)
    return Action(name, text, None if raw is None else _coordinate(raw, viewport), viewport)


def _viewport(setup: JsonObject) -> tuple[int, int] | None:
    width, height = (_side(setup, field) for field in ("width", "height"))
    return (width, height) if width and height else None


def _side(setup: JsonObject, field: str) -> int:
    if (value := setup.get(field)) is not None and not (_whole(value) and 0 < value <= MAX_SIDE):
        raise _bad(f"setup.{field} must be a whole number from 1 to {MAX_SIDE}, not {brief_repr(value)}")
    return value if _whole(value) else 0


def _coordinate(raw: JsonValue, viewport: tuple[int, int] | None) -> tuple[int, int]:
    width, height = viewport or (MAX_COORDINATE + 1, MAX_COORDINATE + 1)
    if (point := _point(raw)) is None:
        raise _bad(f"`coordinate` must be [x, y], two whole numbers of at least 0, not {brief_repr(raw)}")
    if point[0] >= width or point[1] >= height:
        raise _bad(f"`coordinate` {list(point)} is outside the {width}x{height} browser")
    return point


def _browser_url(setup: JsonObject, arguments: JsonObject, operator: str) -> tuple[str, bool]:
    """The browser's address, and whether it is the operator's (trusted) rather than the task's."""
    given = setup.get("connect_url") or arguments.get("connect_url")
    if not given and not operator:
        raise _bad(
            "no browser is configured: give `connect_url` (in the tool's setup or the call's arguments), a "
            "browser's DevTools websocket such as a browserbase session's connect_url, or have the operator "
            "set MINT_REMOTE_BROWSER_BASE_URL to the ws:// or wss:// DevTools URL of a browser tasks may drive"
        )
    url = given or operator
    if not isinstance(url, str) or urlsplit(url).scheme not in ("ws", "wss"):
        where = "`connect_url`" if given else "MINT_REMOTE_BROWSER_BASE_URL"
        raise _bad(f"{where} must be a ws:// or wss:// DevTools URL, such as a browserbase session's")
    return url, not given


class Pinned(TypedDict, total=False):
    host: str  # the address the egress check approved
    port: int


class Browser:
    """One CDP connection: commands by id, the page's session once attached, its load events counted. Every
    wait ends at the call's deadline."""

    def __init__(self, deadline: float):
        self.deadline = deadline
        self.socket: ClientConnection | None = None
        self.session: str | None = None
        self.last_id = self.loads = 0  # (loads: the page's Page.loadEventFired events so far)

    async def bounded(self, awaitable: Awaitable[T], what: str) -> T:
        try:
            async with asyncio.timeout_at(self.deadline):
                return await awaitable
        except TimeoutError:
            raise errors.transient(f"the browser was too slow ({what})", "IntegrationTimeout") from None

    async def open(self, url: str, egress: EgressPolicy | None) -> None:
        """Connects, directly (no proxy); for a task's URL (`egress` given), to the address the egress check
        approved, the URL's host still in Host and TLS (and a redirect to another origin refused)."""
        pinned: Pinned = {}
        if egress is not None:
            parts = urlsplit(url)
            as_http = urlunsplit(parts._replace(scheme="https" if parts.scheme == "wss" else "http"))
            try:
                checked = await self.bounded(egress.resolve(as_http, quote=False), "resolving connect_url")
            except EgressRefused as exc:
                raise errors.permanent(f"remote_browser's connect_url: {exc}", "EgressRefused") from None
            pinned = {"host": checked.address, "port": checked.port}
        size = MAX_SCREENSHOT_BYTES * 4 // 3 + 64 * 1024  # a screenshot's message
        opening = connect(url, proxy=None, max_size=size, open_timeout=None, ping_interval=None, **pinned)
        try:
            self.socket = await self.bounded(opening, "the websocket handshake")
        except ValueError as exc:  # (a redirect to another origin, not followed: the answer is its cause)
            raise exc.__cause__ if isinstance(exc.__cause__, InvalidStatus) else exc from None

    def close(self) -> None:
        if self.socket is not None:
            self.socket.transport.abort()  # at once: a browser needs no closing handshake

    async def attach(self, viewport: tuple[int, int] | None) -> None:
        """The session of the first web page (a new one when there is none), its page events on."""
        targets = (await self.send("Target.getTargets")).get("targetInfos")
        pages = (
            [t.get("targetId") for t in targets or [] if isinstance(t, dict) and _web_page(t)]
            if isinstance(targets, list)
            else []
        )
        blank: JsonObject = {"url": "about:blank"}
        target = pages[0] if pages else (await self.send("Target.createTarget", blank)).get("targetId")
        attached = await self.send("Target.attachToTarget", {"targetId": target, "flatten": True})
        if not isinstance(session := attached.get("sessionId"), str):
            raise errors.permanent("the browser attached no session to its page", "BadAnswer")
        self.session = session
        await self.send("Page.enable")
        if viewport:
            metrics: JsonObject = {
                "width": viewport[0],
                "height": viewport[1],
                "deviceScaleFactor": 1,
                "mobile": False,
            }
            await self.send("Emulation.setDeviceMetricsOverride", metrics)

    async def send(self, method: str, params: JsonObject | None = None) -> JsonObject:
        """The command's result; the browser's error answer is a permanent error naming the command."""
        assert self.socket is not None
        self.last_id += 1
        message: JsonObject = {"id": self.last_id, "method": method, "params": params or {}}
        if self.session and not method.startswith("Target."):
            message["sessionId"] = self.session
        await self.bounded(self.socket.send(json.dumps(message)), method)
        while (answer := await self._receive(method)).get("id") != self.last_id:
            pass
        if "error" in answer:
            error = answer["error"] if isinstance(answer["error"], dict) else {}
            text = str(error.get("message") or "no message")[:300]
            raise errors.permanent(f"the browser refused {method}: {text}", "BrowserRefused")
        result = answer.get("result")
        return result if isinstance(result, dict) else {}

    async def _receive(self, waiting_for: str) -> JsonObject:
        assert self.socket is not None
        raw = await self.bounded(self.socket.recv(), waiting_for)
        try:
            message = json.loads(raw)
        except (ValueError, RecursionError):
            message = None
        if not isinstance(message, dict):
            raise errors.permanent("the browser answered something other than CDP's JSON", "BadAnswer")
        if message.get("method") == "Page.loadEventFired" and message.get("sessionId") == self.session:
            self.loads += 1
        return message

    async def load(self, method: str, params: JsonObject) -> None:
        """Navigates (Page.navigate, Page.reload), then waits for the load event (which may come first)."""
        before = self.loads
        result = await self.send(method, params)
        if result.get("errorText"):
            text = str(result["errorText"])[:300]
            raise errors.permanent(f"the browser could not open the page: {text}", "NavigationFailed")
        if method == "Page.reload" or result.get("loaderId"):  # (no loaderId: within the same document)
            while self.loads == before:
                await self._receive("the page's load event")

    async def evaluate(self, expression: str) -> JsonValue:
        result = (await self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})).get(
            "result"
        )
        return result.get("value") if isinstance(result, dict) else None


class Page(Browser):
    """The actions, each answering as Julep does."""

    async def perform(self, action: Action) -> Answer:
        name = action.name if action.name in Page.__dict__ else "click"  # (the four clicks are one)
        act: Callable[[Action], Awaitable[Answer]] = getattr(self, name)
        return await act(action)

    async def navigate(self, action: Action) -> Answer:
        await self.load("Page.navigate", {"url": action.text})
        return _answer(action.text)

    async def refresh(self, action: Action) -> Answer:
        await self.load("Page.reload", {})
        return _answer("Refreshed page")

    async def key(self, action: Action) -> Answer:
        for keys in combinations(action.text):
            await self.press(keys)
        return _answer(f"Pressed {action.text}")

    async def type(self, action: Action) -> Answer:
        for i, line in enumerate(action.text.replace("\r\n", "\n").split("\n")):
            if i:
                await self.press(["Enter"])
            if line:
                await self.send("Input.insertText", {"text": line})
        return _answer(f"Typed {action.text}")

    async def cursor_position(self, action: Action) -> Answer:
        x, y = await self.cursor()
        return _answer(f"X={x}, Y={y}")

    async def mouse_move(self, action: Action) -> Answer:
        assert action.coordinate is not None
        await self.move_to(*action.coordinate)
        return _answer(f"Moved mouse to {list(action.coordinate)}")

    async def left_click_drag(self, action: Action) -> Answer:
        assert action.coordinate is not None
        x, y = await self.cursor()
        await self.mouse("mousePressed", x, y, "left", 1)
        await self.move_to(*action.coordinate, button="left")
        await self.mouse("mouseReleased", *action.coordinate, "left", 1)
        return _answer(f"Left clicked and dragged to {list(action.coordinate)}")

    async def click(self, action: Action) -> Answer:
        if action.coordinate:
            await self.move_to(*action.coordinate)
        x, y = action.coordinate or await self.cursor()
        button = {"right_click": "right", "middle_click": "middle"}.get(action.name, "left")
        for clicks in (1, 2) if action.name == "double_click" else (1,):
            await self.mouse("mousePressed", x, y, button, clicks)
            await self.mouse("mouseReleased", x, y, button, clicks)
        return _answer(f"{action.name.split('_')[0].capitalize()} clicked")

    async def screenshot(self, action: Action) -> Answer:
        data = (await self.send("Page.captureScreenshot", {"format": "png"})).get("data")
        if not isinstance(data, str):
            raise errors.permanent("the browser answered no screenshot", "BadAnswer")
        if len(data) * 3 // 4 > MAX_SCREENSHOT_BYTES:
            raise errors.permanent(TOO_LARGE, "ResponseTooLarge")
        return {**_answer(None), "base64_image": f"data:image/png;base64,{data}", "system": "take_screenshot"}

    async def cursor(self) -> tuple[int, int]:
        return _point(await self.evaluate(READ_CURSOR), 10**9) or (0, 0)

    async def move_to(self, x: int, y: int, button: str = "none") -> None:
        await self.mouse("mouseMoved", x, y, button)
        await self.evaluate(f"{CURSOR} = [{x}, {y}]")  # (two ints: nothing of the task's is run)

    async def mouse(self, kind: str, x: int, y: int, button: str = "none", clicks: int = 0) -> None:
        held = BUTTONS[button] if kind != "mouseReleased" else 0
        params: JsonObject = {
            "type": kind,
            "x": x,
            "y": y,
            "button": button,
            "buttons": held,
            "clickCount": clicks,
        }
        await self.send("Input.dispatchMouseEvent", params)

    async def press(self, keys: list[str]) -> None:
        """A combination as Playwright presses one: modifiers down, the key down and up, modifiers up."""
        modifiers = 0
        for key in keys[:-1]:
            modifiers |= MODIFIERS.get(key, 0)
            await self.key_event("keyDown", key, modifiers)
        await self.key_event("keyDown", keys[-1], modifiers)
        await self.key_event("keyUp", keys[-1], modifiers)
        for key in reversed(keys[:-1]):
            modifiers &= ~MODIFIERS.get(key, 0)
            await self.key_event("keyUp", key, modifiers)

    async def key_event(self, kind: str, key: str, mods: int) -> None:
        await self.send("Input.dispatchKeyEvent", key_event(kind, key, mods))


def _web_page(target: JsonObject) -> bool:
    """Web pages only: a file: or chrome: page open in the browser is not the task's to see."""
    return target.get("type") == "page" and str(target.get("url")).split(":")[0] in ("http", "https", "about")


def _answer(output: str | None) -> Answer:
    return {"output": output, "error": None, "base64_image": None, "system": None}


def _connection_error(exc: Exception) -> ApplicationError:
    """What a failed connection means: the browser refusing it (4xx) is permanent, the rest may pass."""
    if isinstance(exc, InvalidStatus):
        status = exc.response.status_code
        retry = errors.transient if status >= 500 or status in (408, 429) else errors.permanent
        return retry(f"the browser refused the connection ({status})", "BrowserRefused")
    if isinstance(exc, InvalidURI):
        return _bad("`connect_url` is not a valid websocket URL")
    if isinstance(exc, ConnectionClosed) and exc.sent is not None and exc.sent.code == 1009:
        return errors.permanent(TOO_LARGE, "ResponseTooLarge")  # (a message over max_size)
    if isinstance(exc, ConnectionClosed):
        return errors.transient("the browser closed the connection", "BrowserUnavailable")
    detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
    return errors.transient(f"cannot reach the browser: {detail}", "BrowserUnavailable")


def _whole(value: JsonValue) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _point(value: JsonValue, bound: float = float("inf")) -> tuple[int, int] | None:
    """[x, y] as two whole numbers from 0 to under `bound`; None when it is not that."""
    if not isinstance(value, list) or len(value) != 2:
        return None
    x, y = value
    return (x, y) if _whole(x) and _whole(y) and 0 <= x < bound and 0 <= y < bound else None


def _bad(message: str) -> ApplicationError:
    return errors.permanent(f"remote_browser: {message}", "BadToolCall")
