"""The codec server the Temporal UI calls to show payloads: POST /codec/{token}/decode (and /encode).

Temporal's codec-server protocol: `{"payloads": [<Payload as protobuf JSON>]}` in, the same shape out. It
runs Mint's own codec, so the UI sees decrypted, claim-check-resolved values. Payloads from every tenant
pass through Temporal, so this is for operators only: the URL carries `MINT_CODEC_TOKEN` (the UI appends
`/decode` to its codec endpoint, so `<API URL>/codec/<token>` works with any UI, without UI auth), and the
routes are absent (404) when no token is set. `mint up` sets one and points its UI at it.
"""

from __future__ import annotations

import hmac
from typing import Any

from fastapi import APIRouter, Request, Response
from google.protobuf.json_format import MessageToDict, ParseDict, ParseError
from temporalio.api.common.v1 import Payload

from api.errors import ApiError
from mint.crypto import DecryptionError

router = APIRouter(tags=["codec"], include_in_schema=False)
# The UI calls from the browser, on another origin; the token, not the origin, is what is checked.
CORS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "POST, OPTIONS",
    "Access-Control-Allow-Headers": "Authorization, Content-Type, X-Namespace",
}


@router.options("/codec/{token}/{operation}")
async def preflight(token: str, operation: str) -> Response:
    return Response(status_code=204, headers=CORS)


@router.post("/codec/{token}/{operation}")
async def codec(token: str, operation: str, request: Request, response: Response) -> dict[str, Any]:
    _check_token(request, token)
    if operation not in ("encode", "decode"):
        raise ApiError(404, f"no codec operation {operation!r}: use /codec/encode or /codec/decode")
    try:
        body = await request.json()
        payloads = [ParseDict(p, Payload()) for p in body["payloads"]]
    except (ValueError, KeyError, TypeError, ParseError) as exc:
        raise ApiError(422, f'the body must be {{"payloads": [...]}} of Temporal payloads: {exc}') from None
    codec = request.app.state.temporal.data_converter.payload_codec
    try:
        converted = await (codec.encode(payloads) if operation == "encode" else codec.decode(payloads))
    except DecryptionError as exc:
        raise ApiError(422, f"a payload could not be decrypted: {exc}") from None
    response.headers.update(CORS)
    return {"payloads": [MessageToDict(p) for p in converted]}


def _check_token(request: Request, given: str) -> None:
    token = request.app.state.settings.codec_token
    # One answer for "off" and "wrong token", so the endpoint tells a prober nothing.
    if not token or not hmac.compare_digest(given.encode(), token.encode()):
        raise ApiError(404, "no codec server here (its URL is <API URL>/codec/<MINT_CODEC_TOKEN>)")
