"""Who may use the codec server: the operator, holding MINT_CODEC_TOKEN (infra/settings/).

Payloads of every tenant pass through Temporal, so decoding them is an operator's power, and nothing the
Temporal UI shows (its settings name the codec endpoint to anyone who can load the UI) may carry it. The
operator proves it in one of two ways:

- `Authorization: Bearer <token>`: the Temporal CLI (`--codec-auth "Bearer <token>"`), scripts.
- a session cookie, set by signing in at `/codec/sign-in`, for the Temporal UI in a browser. The UI sends it
  with codec calls to its own origin (`mint up`'s UI, process/ui_gateway.py), or to another when its codec
  setting "Include cross-origin credentials" is on; the cookie counts only on a request whose `Origin` is
  one of MINT_CODEC_ORIGINS (the UI's origin), and CORS names that origin, never `*`.

A browser signs in with the token, or with a one-time link that `mint up` prints to its own terminal
(`sign_in_code`): the code is good once, and only in the process that printed it.

The cookie holds an expiry and an HMAC of it under the token, never the token: it expires by itself, and
changing the token ends every session.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time

from fastapi import Request

COOKIE = "mint_codec_session"
SESSION_SECONDS = 12 * 3600
ALLOWED_HEADERS = "Authorization, Authorization-Extras, Content-Type, X-Namespace"


# Digests of the one-time sign-in codes this process printed and nobody has used yet: a code lives in memory
# only, so that a link left in a terminal's scrollback dies with the `mint up` that printed it.
_unused_codes: set[str] = set()


def sign_in_code() -> str:
    """A new one-time code that signs one browser in, for a link's fragment (never sent to a server, so never
    in a log or a Referer); good until it is used or this process stops."""
    code = secrets.token_urlsafe(32)
    _unused_codes.add(hashlib.sha256(code.encode()).hexdigest())
    return code


def redeem_sign_in_code(code: str) -> bool:
    """Whether `code` is one this process printed and nobody used yet; a code redeemed is used up."""
    digest = hashlib.sha256(code.encode()).hexdigest()
    if digest not in _unused_codes:
        return False
    _unused_codes.discard(digest)
    return True


def session_value(token: str, expires: int) -> str:
    """The cookie's value for a session that ends at `expires` (Unix seconds)."""
    return f"{expires}.{_mac(token, expires)}"


def new_session(token: str) -> str:
    return session_value(token, int(time.time()) + SESSION_SECONDS)


def is_token(given: str, token: str) -> bool:
    return hmac.compare_digest(given.encode(), token.encode())


def is_operator(request: Request, token: str, origins: tuple[str, ...]) -> bool:
    """Whether the request carries the operator's bearer token, or a live session from an allowed origin."""
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer ") and is_token(header[7:].strip(), token):
        return True
    # A cookie travels with whatever request a browser makes to this host; only the UI's may use it.
    return allowed_origin(request, origins) is not None and _live_session(
        request.cookies.get(COOKIE, ""), token
    )


def allowed_origin(request: Request, origins: tuple[str, ...]) -> str | None:
    origin = request.headers.get("origin")
    return origin if origin and origin in origins else None


def cors_headers(request: Request, origins: tuple[str, ...]) -> dict[str, str]:
    """CORS for the UI's origin with credentials (cookies), or nothing: the browser then refuses to share
    the answer with the page."""
    origin = allowed_origin(request, origins)
    if origin is None:
        return {"Vary": "Origin"}
    return {
        "Access-Control-Allow-Origin": origin,
        "Access-Control-Allow-Credentials": "true",
        "Access-Control-Allow-Methods": "POST, OPTIONS",
        "Access-Control-Allow-Headers": ALLOWED_HEADERS,
        "Access-Control-Max-Age": "600",
        "Vary": "Origin",
    }


def _live_session(value: str, token: str) -> bool:
    expires, _, mac = value.partition(".")
    if not expires.isdigit() or int(expires) < time.time():
        return False
    return hmac.compare_digest(mac.encode(), _mac(token, int(expires)).encode())


def _mac(token: str, expires: int) -> str:
    return hmac.new(token.encode(), f"mint codec session {expires}".encode(), hashlib.sha256).hexdigest()
