"""`unstructured`: partition a document into elements through Unstructured's API (POST
/general/v0/general, the file as multipart form data, the key in `unstructured-api-key`). `setup.server_url`
may name another server (it passes the egress check like any address). Julep's answer is {content_type,
status_code, csv_elements, content}."""

from __future__ import annotations

import base64
import binascii
from typing import TypedDict

import httpx

from activities.integrations.common import Service, answer_json, join
from contracts.json import JsonObject, JsonValue
from infra.temporal import errors

DEFAULT_BASE_URL = "https://api.unstructuredapp.io"
METHODS = ("partition",)


class Answer(TypedDict):
    content_type: str
    status_code: int
    csv_elements: None
    content: list[JsonValue]  # the elements, as Unstructured answers them


async def call(service: Service, method: str, setup: JsonObject, arguments: JsonObject) -> Answer:
    try:
        document = base64.b64decode(str(arguments["file"]), validate=True)
    except (binascii.Error, ValueError):
        raise errors.permanent("`file` must be the document's bytes in base64", "BadToolCall") from None
    params = arguments.get("partition_params") or {}
    if not isinstance(params, dict):
        raise errors.permanent("`partition_params` must be a mapping", "BadToolCall")
    # httpx writes the multipart body; api_call's client then sends it as it is.
    form = httpx.Request(
        "POST",
        "http://multipart.invalid/",
        data={k: v if isinstance(v, str) else str(v).lower() for k, v in params.items()},
        files={"files": (str(arguments.get("filename") or "document"), document)},
    )
    base = str(setup.get("server_url") or service.base_url)
    response = await service.fetch(
        {
            "method": "POST",
            "url": join(base, "/general/v0/general"),
            "content": form.read(),
            "headers": {
                "Content-Type": form.headers["Content-Type"],
                "Accept": "application/json",
                "unstructured-api-key": str(setup["unstructured_api_key"]),
            },
        }
    )
    elements = answer_json("Unstructured", response)
    return {
        "content_type": "application/json",
        "status_code": response["status_code"],
        "csv_elements": None,
        "content": elements if isinstance(elements, list) else [elements],
    }
