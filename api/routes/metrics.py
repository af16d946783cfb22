"""GET /metrics: Prometheus metrics for the operator.

They count every tenant's executions and calls, so no developer's API key opens them: only the operator's
token (MINT_CODEC_TOKEN, the credential the codec server takes; `mint up` keeps it in the data dir, where a
Prometheus `bearer_token_file` can read it). Without that token the route is absent (404); a metrics port
of its own (MINT_METRICS_PORT) serves them without a key, where the network alone guards them.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST

from api import operator_auth
from api.deps import ClientsDep
from api.errors import ApiError

router = APIRouter(tags=["metrics"], include_in_schema=False)


@router.get("/metrics")
async def metrics(request: Request, clients: ClientsDep) -> Response:
    settings, collected = request.app.state.settings, clients.metrics
    if collected is None or not settings.codec_token:
        raise ApiError(404, "no metrics here: set MINT_CODEC_TOKEN (the operator's token) to turn them on")
    header = request.headers.get("authorization", "")
    if not (
        header.lower().startswith("bearer ")
        and operator_auth.is_token(header[7:].strip(), settings.codec_token)
    ):
        raise ApiError(
            401,
            "metrics are for the operator: send `Authorization: Bearer <MINT_CODEC_TOKEN>` (an API key does not "
            "open them)",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return Response(await collected.render(), media_type=CONTENT_TYPE_LATEST)
