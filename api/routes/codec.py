"""The codec server the Temporal UI calls to show payloads: POST /codec/decode (and /codec/encode).

Temporal's codec-server protocol: `{"payloads": [<Payload as protobuf JSON>]}` in, the same shape out. It
runs Mint's own codec, so the UI sees decrypted, claim-check-resolved values. Payloads from every tenant
pass through Temporal, so this endpoint is for operators only: it answers only `MINT_CODEC_TOKEN`, and is
absent (404) when that is unset. Point the UI at `<API URL>/codec` with "pass access token" on.
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


@router.options("/codec/{operation}")
async def preflight(operation: str) -> Response:
    return Response(status_code=204, headers=CORS)


@router.post("/codec/{operation}")
async def codec(operation: str, request: Request, response: Response) -> dict[str, Any]:
    _check_token(request)
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


def _check_token(request: Request) -> None:
    token = request.app.state.settings.codec_token
    if not token:
        raise ApiError(404, "the codec server is off: set MINT_CODEC_TOKEN to turn it on")
    header = request.headers.get("authorization", "")
    given = header[7:].strip() if header.lower().startswith("bearer ") else ""
    if not hmac.compare_digest(given.encode(), token.encode()):
        raise ApiError(401, "the codec server needs `Authorization: Bearer <MINT_CODEC_TOKEN>`")
