"""The api_call tool: one HTTP request through httpx, to the address the egress check approved.

`timeout` is the deadline of the whole call (resolving, connecting, sending, every redirect hop and the whole
body), so a server that drips a byte at a time cannot stretch it; it is at most MINT_MAX_TOOL_TIMEOUT_SECONDS.
A request that carries a secret (anywhere: URL, headers, params, body) never follows a redirect to another
origin, and its errors never quote its URL.
"""

from __future__ import annotations

import asyncio
from typing import TypedDict
from urllib.parse import urlsplit, urlunsplit

import httpx
from temporalio import activity

from activities.egress import Destination, EgressPolicy, EgressRefused
from activities.heartbeat import heartbeating
from activities.secrets import reveal
from contracts.calls import ApiCallRequest, CallAnswer
from contracts.executions import DEFAULT_MAX_TOOL_TIMEOUT_SECONDS
from contracts.json import JsonValue
from contracts.temporal import CALL_API
from infra.store.secrets import SecretStore
from infra.temporal import errors
from workflows.calls import bounded_timeout

MAX_RESPONSE_BYTES = 64 * 1024 * 1024
MAX_REDIRECTS = 5
# Headers that carry credentials never follow a redirect to another origin: these, and any whose name says
# it holds a credential (X-Custom-Token, X-Client-Secret, ...).
CREDENTIAL_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "cookie", "x-api-key", "api-key", "apikey", "x-auth-token"}
)
CREDENTIAL_WORDS = ("auth", "token", "key", "secret", "password", "passwd", "session", "cookie", "signature")
NOT_CREDENTIALS = frozenset({"idempotency-key"})


class HttpResponse(TypedDict):
    """What api_call answers, and what a provider's fetch gets back: the body as text, and parsed when it
    is JSON (None otherwise)."""

    status_code: int
    headers: dict[str, str]
    content: str
    json: JsonValue


class HttpActivities:
    def __init__(
        self,
        client: httpx.AsyncClient,
        egress: EgressPolicy,
        secrets: SecretStore,
        max_timeout: float = DEFAULT_MAX_TOOL_TIMEOUT_SECONDS,
    ):
        self.client = client
        self.egress = egress
        self.secrets = secrets
        self.max_timeout = max_timeout

    @activity.defn(name=CALL_API)
    async def call_api(self, request: ApiCallRequest) -> CallAnswer:
        """The response as {status_code, headers, content, json}; network errors, timeouts and 5xx/429
        retry via Temporal. Secrets the request refers to are filled in here, and masked in the answer and
        in errors (a server may echo them)."""
        async with heartbeating():
            # From here on the request is plain data for httpx (its keys checked when the tool was made).
            plain = request.copy()
            plain.pop("secrets", None)
            filled, redactor = await reveal(self.secrets, plain, request.get("secrets"))
            try:
                response = await self._call(filled, carries_secrets=bool(redactor))
            except Exception as exc:
                raise redactor.error(exc) from None
            return CallAnswer(response=redactor.value(response), attempt=activity.info().attempt)

    async def fetch(self, request: ApiCallRequest) -> HttpResponse:
        """One request with api_call's rules, for the integration providers (activities/integrations/): its
        secrets already filled in, so its URL is never quoted; 5xx and 429 raise (to retry), other answers
        come back as {status_code, headers, content, json}."""
        return await self._call(request, carries_secrets=True)

    async def download(self, url: str, request: ApiCallRequest, deadline: float) -> bytes:
        """A file's bytes by GET, for the integration providers, with api_call's rules (egress check and pinned
        address at every hop, size cap); redirects followed, each hop checked (a download carries no
        credential, so it may go to any origin); an answer other than 2xx fails the call."""
        for _ in range(MAX_REDIRECTS + 1):
            status, headers, body = await self._send("GET", url, request, deadline, carries_secrets=True)
            if not (300 <= status < 400 and "location" in headers):
                break
            url = str(httpx.URL(url).join(headers["location"]))
        error = errors.for_http_status(f"the file at {url}", status)
        if error:
            raise error
        if status >= 300:
            raise errors.permanent(
                f"the file at {url} could not be downloaded: it answered {status}", "IntegrationRefused"
            )
        return body

    async def _call(self, request: ApiCallRequest, carries_secrets: bool) -> HttpResponse:
        try:
            deadline = bounded_timeout(request.get("timeout"), self.max_timeout)
        except ValueError as exc:
            raise errors.permanent(str(exc), "BadToolCall") from None
        timer = asyncio.timeout(deadline)
        try:
            async with timer:
                return await self._follow(request, deadline, carries_secrets)
        except TimeoutError:
            if not timer.expired():
                raise
            raise errors.transient(
                f"the call did not finish within its timeout of {deadline:g} seconds (connecting, sending, "
                "redirects and reading the whole response)",
                "HttpTimeout",
            ) from None

    async def _follow(self, request: ApiCallRequest, deadline: float, carries_secrets: bool) -> HttpResponse:
        """The request, and the redirects it follows (by hand, so that every hop passes the egress check)."""
        url = first = str(request.get("url", ""))
        method = str(request.get("method", "GET")).upper()
        for _ in range(MAX_REDIRECTS + 1):
            status, headers, body = await self._send(method, url, request, deadline, carries_secrets)
            if not (request.get("follow_redirects") and 300 <= status < 400 and "location" in headers):
                break
            next_url = _redirect_target(url, headers["location"])
            if carries_secrets and _origin(next_url) != _origin(first):
                raise errors.permanent(
                    f"the response redirects to another origin ({_origin_text(next_url)}); a request that "
                    "carries secrets does not follow it there. Call that URL itself if it is meant",
                    "RedirectRefused",
                )
            request = _for_redirect(request, url, next_url, status, method)
            method = "GET" if status == 303 or (status in (301, 302) and method == "POST") else method
            url = next_url
        error = errors.for_http_status("the URL" if carries_secrets else url, status)
        if error:
            raise error
        return _result(status, headers, body)

    async def _send(
        self, method: str, url: str, request: ApiCallRequest, deadline: float, carries_secrets: bool
    ) -> tuple[int, dict[str, str], bytes]:
        try:
            destination = await self.egress.resolve(url, quote=not carries_secrets)
        except EgressRefused as exc:
            raise errors.permanent(str(exc), "EgressRefused") from None
        pinned, headers, extensions = pinned_url(url, destination, request.get("headers") or {})
        try:
            async with self.client.stream(
                method,
                pinned,
                headers=headers,
                params=request.get("params"),
                json=request.get("json"),
                content=request.get("content"),
                data=request.get("data"),
                timeout=deadline,  # per operation; the whole call is bounded by the same deadline in _call
                follow_redirects=False,
                extensions=extensions,
            ) as response:
                body = await _read_capped(response)
                return response.status_code, dict(response.headers), body
        except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
            detail = f"bad URL {url!r}: {exc}" if not carries_secrets else "the URL is not valid"
            raise errors.permanent(detail, "BadToolCall") from None


def pinned_url(
    url: str, destination: Destination, headers: dict[str, str]
) -> tuple[str, dict[str, str], dict[str, str]]:
    """`url` aimed at the checked address, with the original host in Host (and in TLS, for https)."""
    parts = urlsplit(url)
    address = f"[{destination.address}]" if ":" in destination.address else destination.address
    default_port = 443 if destination.scheme == "https" else 80
    netloc = address if destination.port == default_port else f"{address}:{destination.port}"
    host_header = (
        destination.host if destination.port == default_port else f"{destination.host}:{destination.port}"
    )
    headers = {**{k: v for k, v in headers.items() if k.lower() != "host"}, "Host": host_header}
    extensions = {"sni_hostname": destination.host} if destination.scheme == "https" else {}
    return urlunsplit(parts._replace(netloc=netloc)), headers, extensions


def _redirect_target(url: str, location: str) -> str:
    try:
        return str(httpx.URL(url).join(location))
    except httpx.InvalidURL:
        raise errors.permanent("the response redirects to an invalid URL", "BadRedirect") from None


def _for_redirect(request: ApiCallRequest, old: str, new: str, status: int, method: str) -> ApiCallRequest:
    """The request for the next hop: no credentials across origins; a GET carries no body."""
    following: ApiCallRequest = {**request, "params": None}
    if _origin(old) != _origin(new):
        headers = request.get("headers") or {}
        following["headers"] = {k: v for k, v in headers.items() if not is_credential(k)}
    if status == 303 or (status in (301, 302) and method == "POST"):
        following.update({"json": None, "content": None, "data": None})
    return following


def is_credential(header: str) -> bool:
    """Whether a header, by its name, carries a credential."""
    name = header.lower()
    if name in NOT_CREDENTIALS:
        return False
    return name in CREDENTIAL_HEADERS or any(word in name for word in CREDENTIAL_WORDS)


def _origin(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = -1  # an invalid port: an origin of its own (the egress check refuses it)
    return parts.scheme, (parts.hostname or "").lower(), port or (443 if parts.scheme == "https" else 80)


def _origin_text(url: str) -> str:
    scheme, host, port = _origin(url)
    return f"{scheme}://{f'[{host}]' if ':' in host else host}:{port}"


async def _read_capped(response: httpx.Response) -> bytes:
    chunks, size = [], 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:
            raise errors.permanent(
                f"the response is larger than {MAX_RESPONSE_BYTES} bytes", "ResponseTooLarge"
            )
        chunks.append(chunk)
    return b"".join(chunks)


def _result(status: int, headers: dict[str, str], body: bytes) -> HttpResponse:
    # `body` is already decompressed: keep the charset, drop what describes the wire encoding.
    plain = {k: v for k, v in headers.items() if k.lower() not in ("content-encoding", "content-length")}
    response = httpx.Response(status, headers=plain, content=body)
    try:
        parsed = response.json()
    except ValueError:
        parsed = None
    except RecursionError:  # the JSON nests hundreds of levels deep: no retry can change that
        raise errors.permanent(
            "the response's JSON is nested too deeply to read", "ResponseTooDeep"
        ) from None
    return {"status_code": status, "headers": headers, "content": response.text, "json": parsed}
