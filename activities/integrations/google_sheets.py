"""`google_sheets`: Julep's six Google Sheets methods, through the Sheets API v4's REST endpoints as Google's
client calls them, authorized as a service account (Google's OAuth 2.0 for server-to-server applications).

Authorization: `service_account_json` is the service account's key file in base64 (as Julep takes it); a JWT
naming the account (`iss`), the spreadsheets scope and the token endpoint (`aud`: the key file's `token_uri`),
signed RS256 with its private key, is exchanged at that endpoint for an access token (grant type
`urn:ietf:params:oauth:grant-type:jwt-bearer`), sent as a bearer token. The private key never leaves the
worker. `use_julep_service: true` asks for Julep's own service account, which Mint does not have: refused.

Methods (GET/PUT/POST {base}/v4/spreadsheets/{id}/values/...; the range, in A1 notation, encoded in the path):
read_values (values/{range}), write_values (PUT values/{range}), append_values (values/{range}:append),
clear_values (values/{range}:clear), batch_read (values:batchGet?ranges=...), batch_write
(values:batchUpdate). Answers have Julep's shapes (snake_case: range, major_dimension, values;
spreadsheet_id, updated_range, updated_rows, ...). The API's address is the operator's
MINT_GOOGLE_SHEETS_BASE_URL; the token endpoint is the key file's (each passes the egress check).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
from typing import Any
from urllib.parse import quote

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from activities.integrations.common import answer_json, join, refused
from infra.temporal import errors

DEFAULT_BASE_URL = "https://sheets.googleapis.com"
TOKEN_URI = "https://oauth2.googleapis.com/token"
SCOPE = "https://www.googleapis.com/auth/spreadsheets"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
SPREADSHEET_ID = re.compile(r"[A-Za-z0-9_-]{1,200}")
CHOICES = {
    "major_dimension": ("ROWS", "COLUMNS"),
    "value_render_option": ("FORMATTED_VALUE", "UNFORMATTED_VALUE", "FORMULA"),
    "date_time_render_option": ("SERIAL_NUMBER", "FORMATTED_STRING"),
    "value_input_option": ("RAW", "USER_ENTERED"),
    "insert_data_option": ("OVERWRITE", "INSERT_ROWS"),
}


async def call(service: Any, method: str, setup: dict[str, Any], arguments: dict[str, Any]) -> Any:
    spreadsheet = arguments["spreadsheet_id"]
    if not isinstance(spreadsheet, str) or not SPREADSHEET_ID.fullmatch(spreadsheet):
        raise errors.permanent(
            "google_sheets' `spreadsheet_id` must be a spreadsheet's id (letters, digits, `-` and `_`)",
            "BadToolCall",
        )
    choices = _choices(method, arguments)
    token = await _access_token(service, setup)
    url = join(service.base_url, f"/v4/spreadsheets/{spreadsheet}/values")
    headers = {"Authorization": f"Bearer {token}"}
    if method == "batch_read":
        return await _batch_read(service, url, headers, spreadsheet, arguments, choices)
    if method == "batch_write":
        return await _batch_write(service, url, headers, spreadsheet, arguments, choices)
    cell_range = _text(arguments, "range")
    target = f"{url}/{quote(cell_range, safe='')}"
    if method == "read_values":
        data = await _send(
            service, {"method": "GET", "url": target, "params": _read_params(choices)}, headers
        )
        return {
            "range": data.get("range", cell_range),
            "major_dimension": data.get("majorDimension", choices["major_dimension"]),
            "values": data.get("values", []),
        }
    if method == "clear_values":
        data = await _send(service, {"method": "POST", "url": f"{target}:clear", "json": {}}, headers)
        return {"spreadsheet_id": spreadsheet, "cleared_range": data.get("clearedRange", cell_range)}
    return await _write(service, method, target, headers, spreadsheet, arguments, choices)


def _choices(method: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The options with Julep's defaults, each checked; `include_values_in_response` a boolean."""
    defaults = {
        "major_dimension": "ROWS",
        "value_render_option": "FORMATTED_VALUE",
        "date_time_render_option": "FORMATTED_STRING",
        "value_input_option": "USER_ENTERED",
        "insert_data_option": "INSERT_ROWS" if method == "append_values" else "OVERWRITE",
    }
    chosen = {name: arguments.get(name) or default for name, default in defaults.items()}
    for name, value in chosen.items():
        if value not in CHOICES[name]:
            raise errors.permanent(
                f"google_sheets' `{name}` must be one of {', '.join(CHOICES[name])}, not {value!r:.100}",
                "BadToolCall",
            )
    include = arguments.get("include_values_in_response", False)
    if not isinstance(include, bool):
        raise errors.permanent(
            "google_sheets' `include_values_in_response` must be true or false", "BadToolCall"
        )
    return {**chosen, "include_values_in_response": include}


def _text(arguments: dict[str, Any], name: str) -> str:
    value = arguments.get(name)
    if not isinstance(value, str) or not value:
        raise errors.permanent(
            f"google_sheets' `{name}` must be a range in A1 notation (text)", "BadToolCall"
        )
    return value


def _rows(value: Any, name: str) -> list[list[Any]]:
    if not isinstance(value, list) or not all(isinstance(row, list) for row in value):
        raise errors.permanent(
            f"google_sheets' `{name}` must be a list of rows (lists of values)", "BadToolCall"
        )
    return value


def _read_params(choices: dict[str, Any]) -> dict[str, str]:
    return {
        "majorDimension": choices["major_dimension"],
        "valueRenderOption": choices["value_render_option"],
        "dateTimeRenderOption": choices["date_time_render_option"],
    }


def _write_params(choices: dict[str, Any]) -> dict[str, str]:
    params = {"valueInputOption": choices["value_input_option"]}
    if choices["include_values_in_response"]:
        params.update(includeValuesInResponse="true", responseValueRenderOption="FORMATTED_VALUE")
    return params


async def _write(
    service: Any,
    method: str,
    target: str,
    headers: dict[str, str],
    spreadsheet: str,
    arguments: dict[str, Any],
    choices: dict[str, Any],
) -> dict[str, Any]:
    body = {"values": _rows(arguments.get("values"), "values")}
    params = _write_params(choices)
    if method == "append_values":
        params["insertDataOption"] = choices["insert_data_option"]
        request = {"method": "POST", "url": f"{target}:append", "params": params, "json": body}
        data = (await _send(service, request, headers)).get("updates") or {}
    else:
        data = await _send(service, {"method": "PUT", "url": target, "params": params, "json": body}, headers)
    return {
        "spreadsheet_id": spreadsheet,
        **_updated(data),
        "updated_values": (data.get("updatedData") or {}).get("values")
        if choices["include_values_in_response"]
        else None,
    }


def _updated(data: dict[str, Any]) -> dict[str, Any]:
    return {
        "updated_range": data.get("updatedRange"),
        "updated_rows": data.get("updatedRows"),
        "updated_columns": data.get("updatedColumns"),
        "updated_cells": data.get("updatedCells"),
    }


async def _batch_read(
    service: Any, url: str, headers: dict[str, str], spreadsheet: str, arguments: dict[str, Any], choices: Any
) -> dict[str, Any]:
    ranges = arguments.get("ranges")
    if not isinstance(ranges, list) or not ranges or not all(isinstance(r, str) and r for r in ranges):
        raise errors.permanent(
            "google_sheets' `ranges` must be a list of ranges in A1 notation", "BadToolCall"
        )
    params = {**_read_params(choices), "ranges": ranges}
    data = await _send(service, {"method": "GET", "url": f"{url}:batchGet", "params": params}, headers)
    value_ranges = [
        {
            "range": found.get("range", ""),
            "major_dimension": found.get("majorDimension", choices["major_dimension"]),
            "values": found.get("values", []),
        }
        for found in data.get("valueRanges") or []
    ]
    return {"spreadsheet_id": spreadsheet, "value_ranges": value_ranges}


async def _batch_write(
    service: Any, url: str, headers: dict[str, str], spreadsheet: str, arguments: dict[str, Any], choices: Any
) -> dict[str, Any]:
    data = arguments.get("data")
    if not isinstance(data, list) or not data or not all(isinstance(item, dict) for item in data):
        raise errors.permanent(
            "google_sheets' `data` must be a list of {range, values, major_dimension}", "BadToolCall"
        )
    written = []
    for item in data:
        dimension = item.get("major_dimension") or "ROWS"
        if dimension not in CHOICES["major_dimension"]:
            raise errors.permanent(
                "google_sheets' data[].major_dimension must be ROWS or COLUMNS", "BadToolCall"
            )
        values = _rows(item.get("values"), "data[].values")
        written.append({"range": _text(item, "range"), "values": values, "majorDimension": dimension})
    body = {
        "valueInputOption": choices["value_input_option"],
        "data": written,
        "includeValuesInResponse": choices["include_values_in_response"],
    }
    if choices["include_values_in_response"]:
        body["responseValueRenderOption"] = "FORMATTED_VALUE"
    answer = await _send(service, {"method": "POST", "url": f"{url}:batchUpdate", "json": body}, headers)
    return {
        "spreadsheet_id": spreadsheet,
        "total_updated_sheets": answer.get("totalUpdatedSheets"),
        "total_updated_rows": answer.get("totalUpdatedRows"),
        "total_updated_columns": answer.get("totalUpdatedColumns"),
        "total_updated_cells": answer.get("totalUpdatedCells"),
        "responses": [_updated(response) for response in answer.get("responses") or []],
    }


async def _send(service: Any, request: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    data = answer_json("Google Sheets", await service.fetch({**request, "headers": headers}))
    return data if isinstance(data, dict) else {}


async def _access_token(service: Any, setup: dict[str, Any]) -> str:
    """An access token for the service account, from its token endpoint."""
    if setup.get("use_julep_service") is True:
        raise errors.permanent(
            "google_sheets: `use_julep_service: true` asks for Julep's own service account, which Mint does not "
            "have: set it to false and give your service account's key file in base64 as "
            "`service_account_json` (or as the secret GOOGLE_SHEETS_SERVICE_ACCOUNT_JSON)",
            "BadToolCall",
        )
    account = _account(setup.get("service_account_json"))
    token_uri = account.get("token_uri") or TOKEN_URI
    form = {"grant_type": JWT_BEARER, "assertion": assertion(account, token_uri, int(time.time()))}
    response = await service.fetch({"method": "POST", "url": token_uri, "data": form})
    body = response.get("json")
    if response["status_code"] >= 400 and isinstance(body, dict) and isinstance(body.get("error"), str):
        detail = f"{body['error']}: {body.get('error_description') or 'no description'}"
        raise refused("Google's token endpoint", response["status_code"], {"content": detail})
    data = answer_json("Google's token endpoint", response)
    token = data.get("access_token") if isinstance(data, dict) else None
    if not isinstance(token, str) or not token:
        raise errors.permanent("Google's token endpoint answered no access_token", "BadAnswer")
    return token


def _account(encoded: Any) -> dict[str, Any]:
    """The service account's key file, decoded (base64, its padding added when missing, as Julep does)."""
    try:
        text = str(encoded or "")
        account = json.loads(base64.b64decode(text + "=" * (-len(text) % 4), validate=True))
    except (binascii.Error, ValueError):
        account = None
    if not isinstance(account, dict) or not all(
        isinstance(account.get(k), str) for k in ("client_email", "private_key")
    ):
        raise errors.permanent(
            "google_sheets' `service_account_json` must be a service account's key file (JSON with client_email "
            "and private_key) in base64",
            "BadToolCall",
        )
    return account


def assertion(account: dict[str, Any], token_uri: str, now: int) -> str:
    """The JWT Google's token endpoint exchanges for an access token, signed RS256 with the account's key."""
    try:
        key = serialization.load_pem_private_key(account["private_key"].encode(), password=None)
    except (ValueError, TypeError):
        key = None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise errors.permanent(
            "google_sheets: the key file's private_key is not an RSA key in PEM", "BadToolCall"
        )
    header = {
        "alg": "RS256",
        "typ": "JWT",
        **({"kid": account["private_key_id"]} if account.get("private_key_id") else {}),
    }
    claims = {"iss": account["client_email"], "scope": SCOPE, "aud": token_uri, "iat": now, "exp": now + 3600}
    signing_input = f"{_b64url(header)}.{_b64url(claims)}"
    signature = key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{signing_input}.{base64.urlsafe_b64encode(signature).decode().rstrip('=')}"


def _b64url(value: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(value, separators=(",", ":")).encode()).decode().rstrip("=")
