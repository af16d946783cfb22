"""`mailgun`: send one email through Mailgun's HTTP API (POST /v3/{domain}/messages as a form, basic auth
`api:{key}`); the domain is the sender's. Julep's answer is {success, error}."""

from __future__ import annotations

import base64
from typing import Any

from activities.integrations.common import answer_json, join
from mint.temporal import errors

DEFAULT_BASE_URL = "https://api.mailgun.net"


async def call(service: Any, method: str, setup: dict[str, Any], arguments: dict[str, Any]) -> Any:
    sender = str(arguments["from"])
    domain = sender.rpartition("@")[2].strip(" >")
    if not domain:
        raise errors.permanent(f"`from` must be an email address, not {sender!r}", "BadToolCall")
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
