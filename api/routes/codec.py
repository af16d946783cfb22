"""The codec server the Temporal UI and CLI call to show payloads: POST /codec/decode (and /codec/encode).

Temporal's codec-server protocol: `{"payloads": [<Payload as protobuf JSON>]}` in, the same shape out. It
runs Mint's own codec, so the operator sees decrypted, claim-check-resolved values. Its URL carries no
secret (the UI appends `/decode` to `<API URL>/codec`); every call must come from the operator
(api/operator_auth.py). `mint up` serves these routes on its Temporal UI's origin too (process/ui_gateway.py),
where the UI's calls carry the session of a browser signed in there. The routes are absent (404) when
MINT_CODEC_TOKEN is unset.
"""

from __future__ import annotations

import html
import secrets
from urllib.parse import parse_qs

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse
from google.protobuf.json_format import MessageToDict, ParseDict, ParseError
from temporalio.api.common.v1 import Payload

from api import operator_auth
from api.deps import ClientsDep
from api.errors import ApiError
from services import codec
from services.errors import Invalid

router = APIRouter(tags=["codec"], include_in_schema=False)


@router.options("/codec/{operation}")
async def preflight(operation: str, request: Request) -> Response:
    _, origins = _config(request)
    headers = operator_auth.cors_headers(request, origins)
    return Response(status_code=204 if "Access-Control-Allow-Origin" in headers else 403, headers=headers)


@router.post("/codec/decode")
async def decode(
    request: Request, response: Response, clients: ClientsDep
) -> dict[str, list[dict[str, object]]]:
    payloads, cors = await _operator_payloads(request)
    response.headers.update(cors)
    try:
        opened = await codec.reveal(clients, payloads)
    except Invalid as exc:  # said with the CORS headers, so that the UI can read it
        raise ApiError(422, exc.message, headers=cors) from None
    return {"payloads": [MessageToDict(p) for p in opened]}


@router.post("/codec/encode")
async def encode(
    request: Request, response: Response, clients: ClientsDep
) -> dict[str, list[dict[str, object]]]:
    payloads, cors = await _operator_payloads(request)
    response.headers.update(cors)
    sealed = await codec.seal(clients, payloads)
    return {"payloads": [MessageToDict(p) for p in sealed]}


async def _operator_payloads(request: Request) -> tuple[list[Payload], dict[str, str]]:
    """The request's payloads, once the caller is known to be the operator, and the CORS headers to send."""
    token, origins = _config(request)
    cors = operator_auth.cors_headers(request, origins)
    if not operator_auth.is_operator(request, token, origins):
        raise ApiError(
            401,
            "the codec server is for operators: send `Authorization: Bearer <MINT_CODEC_TOKEN>`, or sign in "
            "at /codec/sign-in and call from an origin in MINT_CODEC_ORIGINS with credentials",
            headers={**cors, "WWW-Authenticate": "Bearer"},
        )
    # JSON only: a browser cannot send it across origins without a CORS preflight, which names the origins.
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        raise ApiError(415, "send the payloads as application/json", headers=cors)
    try:
        body = await request.json()
        return [ParseDict(p, Payload()) for p in body["payloads"]], cors
    except (ValueError, KeyError, TypeError, ParseError, RecursionError) as exc:
        raise ApiError(
            422, f'the body must be {{"payloads": [...]}} of Temporal payloads: {exc}', headers=cors
        ) from None


@router.get("/codec/sign-in", response_class=HTMLResponse)
async def sign_in_page(request: Request) -> HTMLResponse:
    _config(request)
    return _page("Sign in to Mint's codec server", _FORM)


@router.post("/codec/sign-in", response_class=HTMLResponse)
async def sign_in(request: Request) -> Response:
    """Exchange the operator token, or a one-time code `mint up` printed, for a session cookie. Both come as
    form fields, never in a URL; signed in on the Temporal UI's own origin (`mint up`'s), back to the UI."""
    token, origins = _config(request)
    form = parse_qs((await request.body()).decode(errors="replace"))
    code = form.get("code", [""])[0].strip()
    given = form.get("token", [""])[0].strip()
    if code and not operator_auth.redeem_sign_in_code(code):
        return _page("This sign-in link is used up", _USED + _FORM, 401)
    if not code and not operator_auth.is_token(given, token):
        return _page("Wrong token", "<p>That is not MINT_CODEC_TOKEN.</p>" + _FORM, 401)
    if f"http://{request.headers.get('host', '')}" in origins:
        done: Response = RedirectResponse("/", status_code=303)  # the UI, whose codec calls now carry it
    else:
        endpoint = html.escape(f"{str(request.base_url).rstrip('/')}/codec")
        done = _page("Signed in", _NEXT.format(endpoint=endpoint))
    done.set_cookie(
        operator_auth.COOKIE,
        operator_auth.new_session(token),
        max_age=operator_auth.SESSION_SECONDS,
        path="/codec",
        httponly=True,
        samesite="strict",  # the UI is same-site (same host, another port); no other site can send it
        secure=request.url.scheme == "https",
    )
    return done


def _config(request: Request) -> tuple[str, tuple[str, ...]]:
    settings = request.app.state.settings
    if not settings.codec_token:
        raise ApiError(404, "no codec server here: set MINT_CODEC_TOKEN to turn it on")
    return settings.codec_token, settings.codec_origins


# The one-time code comes in the link's fragment, which the browser never sends: the page's own script moves
# it into the form (and out of the address bar and history) and posts it.
_FORM = """<form id="sign-in" method="post" action="/codec/sign-in">
<input type="hidden" name="code">
<label>Operator token (MINT_CODEC_TOKEN) <input type="password" name="token" autofocus></label>
<button>Sign in</button></form>
<script nonce="{nonce}">
const code = location.hash.slice(1);
history.replaceState(null, "", location.pathname);
if (code) {
  const form = document.getElementById("sign-in");
  form.elements.code.value = code;
  form.submit();
}
</script>"""

_USED = """<p>A link from <code>mint up</code> signs in one browser, once, while that <code>mint up</code> runs.
Sign in with the token instead (kept in the data dir's <code>codec_token</code>, or MINT_CODEC_TOKEN).</p>"""

_NEXT = """<p>This browser may now decode payloads for 12 hours: in the Temporal UI of <code>mint up</code> on
this host name, and in a Temporal UI whose codec endpoint is <code>{endpoint}</code> with cross-origin
credentials included (<code>docker-compose.yml</code>'s).</p>"""


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    """A page of the sign-in: no framing, no Referer, not cached, and only its own script runs."""
    nonce = secrets.token_urlsafe(16)
    policy = (
        f"default-src 'none'; script-src 'nonce-{nonce}'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    )
    headers = {
        "Content-Security-Policy": policy,
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
    }
    page = f"<!doctype html><title>{title}</title><h1>{title}</h1>{body.replace('{nonce}', nonce)}"
    return HTMLResponse(page, status, headers=headers)
