"""`mailgun`: send one email through Mailgun's HTTP API (POST /v3/{domain}/messages as a form, basic auth
`api:{key}`); the domain is the sender's. Julep's answer is {success, error}."""

from __future__ import annotations

import base64
from typing import TypedDict

from activities.egress import brief_repr, host_name_or_address
from activities.integrations.common import Service, answer_json, join
from contracts.json import JsonObject
from infra.temporal import errors

DEFAULT_BASE_URL = "https://api.mailgun.net"
METHODS = ("send_email",)


class Answer(TypedDict):
    success: bool
    error: str | None


async def call(service: Service, method: str, setup: JsonObject, arguments: JsonObject) -> Answer:
    sender = str(arguments["from"])
    # The domain goes into the request's path: a host name and nothing else (`/`, `..`, `?` or `#` in it
    # would send the request, with the key, to another of Mailgun's endpoints).
    at, _, written = sender.rpartition("@")
    domain = host_name_or_address(written.strip(" >")) if at else None
    if domain is None:
        raise errors.permanent(
            f"`from` must be an email address at a domain, not {brief_repr(sender)}", "BadToolCall"
        )
    form = {"from": sender, "to": str(arguments["to"]), "subject": str(arguments["subject"])}
    form["text"] = str(arguments["body"])
    form.update({k: str(arguments[k]) for k in ("cc", "bcc") if arguments.get(k)})
    credentials = base64.b64encode(f"api:{setup['api_key']}".encode()).decode()
    response = await service.fetch(
        {
            "method": "POST",
            "url": join(service.base_url, f"/v3/{domain}/messages"),
            "data": form,
            "headers": {"Authorization": f"Basic {credentials}"},
        }
    )
    answer_json("Mailgun", response)
    return {"success": True, "error": None}
