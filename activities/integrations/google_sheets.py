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
from collections.abc import Awaitable, Callable
from typing import TypedDict
from urllib.parse import quote

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from activities.integrations.common import Service, answer_object, join, objects_in, refused_with
from contracts.calls import ApiCallRequest
from contracts.json import JsonObject, JsonValue
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


class Choices(TypedDict):
    """The options a call takes, checked, with Julep's defaults."""

    major_dimension: str
    value_render_option: str
    date_time_render_option: str
    value_input_option: str
    insert_data_option: str
    include_values_in_response: bool


class ValueRange(TypedDict):
    range: JsonValue
    major_dimension: JsonValue
    values: JsonValue


class Cleared(TypedDict):
    spreadsheet_id: str
    cleared_range: JsonValue


class Updated(TypedDict):
    updated_range: JsonValue
    updated_rows: JsonValue
    updated_columns: JsonValue
    updated_cells: JsonValue


class Written(Updated):
    spreadsheet_id: str
    updated_values: JsonValue


class BatchRead(TypedDict):
    spreadsheet_id: str
    value_ranges: list[ValueRange]


class BatchWritten(TypedDict):
    spreadsheet_id: str
    total_updated_sheets: JsonValue
    total_updated_rows: JsonValue
    total_updated_columns: JsonValue
    total_updated_cells: JsonValue
    responses: list[Updated]


Answer = ValueRange | Cleared | Written | BatchRead | BatchWritten


class ServiceAccount(TypedDict):  # what Mint reads of a service account's key file
    client_email: str
    private_key: str
    private_key_id: str | None
    token_uri: str | None


class Sheet:
    """One call on one spreadsheet: its values' URL, the bearer token's header, the arguments and options."""

    def __init__(
        self, service: Service, spreadsheet: str, token: str, arguments: JsonObject, choices: Choices
    ):
        self.service = service
        self.spreadsheet = spreadsheet
        self.url = join(service.base_url, f"/v4/spreadsheets/{spreadsheet}/values")
        self.headers = {"Authorization": f"Bearer {token}"}
        self.arguments = arguments
        self.choices = choices

    def target(self) -> tuple[str, str]:
        """The call's range, and its values' URL."""
        cell_range = _text(self.arguments, "range")
        return cell_range, f"{self.url}/{quote(cell_range, safe='')}"

    async def send(self, request: ApiCallRequest) -> JsonObject:
        return answer_object("Google Sheets", await self.service.fetch({**request, "headers": self.headers}))


async def call(service: Service, method: str, setup: JsonObject, arguments: JsonObject) -> Answer:
    spreadsheet = arguments["spreadsheet_id"]
    if not isinstance(spreadsheet, str) or not SPREADSHEET_ID.fullmatch(spreadsheet):
        raise errors.permanent(
            "google_sheets' `spreadsheet_id` must be a spreadsheet's id (letters, digits, `-` and `_`)",
            "BadToolCall",
        )
    choices = _choices(method, arguments)
    token = await _access_token(service, setup)
    return await METHODS[method](Sheet(service, spreadsheet, token, arguments, choices))


async def _read_values(sheet: Sheet) -> ValueRange:
    cell_range, target = sheet.target()
    data = await sheet.send({"method": "GET", "url": target, "params": _read_params(sheet.choices)})
    return {
        "range": data.get("range", cell_range),
        "major_dimension": data.get("majorDimension", sheet.choices["major_dimension"]),
        "values": data.get("values", []),
    }


async def _clear_values(sheet: Sheet) -> Cleared:
    cell_range, target = sheet.target()
    data = await sheet.send({"method": "POST", "url": f"{target}:clear", "json": {}})
    return {"spreadsheet_id": sheet.spreadsheet, "cleared_range": data.get("clearedRange", cell_range)}


def _choice(arguments: JsonObject, name: str, default: str) -> str:
    value = arguments.get(name) or default
    if not isinstance(value, str) or value not in CHOICES[name]:
        raise errors.permanent(
            f"google_sheets' `{name}` must be one of {', '.join(CHOICES[name])}, not {value!r:.100}",
            "BadToolCall",
        )
    return value


def _choices(method: str, arguments: JsonObject) -> Choices:
    """The options with Julep's defaults, each checked; `include_values_in_response` a boolean."""
    insert_default = "INSERT_ROWS" if method == "append_values" else "OVERWRITE"
    chosen = Choices(
        major_dimension=_choice(arguments, "major_dimension", "ROWS"),
        value_render_option=_choice(arguments, "value_render_option", "FORMATTED_VALUE"),
        date_time_render_option=_choice(arguments, "date_time_render_option", "FORMATTED_STRING"),
        value_input_option=_choice(arguments, "value_input_option", "USER_ENTERED"),
        insert_data_option=_choice(arguments, "insert_data_option", insert_default),
        include_values_in_response=False,
    )
    include = arguments.get("include_values_in_response", False)
    if not isinstance(include, bool):
        raise errors.permanent(
            "google_sheets' `include_values_in_response` must be true or false", "BadToolCall"
        )
    chosen["include_values_in_response"] = include
    return chosen


def _text(arguments: JsonObject, name: str) -> str:
    value = arguments.get(name)
    if not isinstance(value, str) or not value:
        raise errors.permanent(
            f"google_sheets' `{name}` must be a range in A1 notation (text)", "BadToolCall"
        )
    return value


def _rows(value: JsonValue, name: str) -> list[JsonValue]:
    if not isinstance(value, list) or not all(isinstance(row, list) for row in value):
        raise errors.permanent(
            f"google_sheets' `{name}` must be a list of rows (lists of values)", "BadToolCall"
        )
    return value


def _read_params(choices: Choices) -> dict[str, str]:
    return {
        "majorDimension": choices["major_dimension"],
        "valueRenderOption": choices["value_render_option"],
        "dateTimeRenderOption": choices["date_time_render_option"],
    }


def _write_params(choices: Choices) -> dict[str, str]:
    params = {"valueInputOption": choices["value_input_option"]}
    if choices["include_values_in_response"]:
        params.update(includeValuesInResponse="true", responseValueRenderOption="FORMATTED_VALUE")
    return params


async def _write_values(sheet: Sheet) -> Written:
    _, target = sheet.target()
    body: JsonObject = {"values": _rows(sheet.arguments.get("values"), "values")}
    data = await sheet.send(
        {"method": "PUT", "url": target, "params": _write_params(sheet.choices), "json": body}
    )
    return _written(sheet, data)


async def _append_values(sheet: Sheet) -> Written:
    _, target = sheet.target()
    body: JsonObject = {"values": _rows(sheet.arguments.get("values"), "values")}
    params = {**_write_params(sheet.choices), "insertDataOption": sheet.choices["insert_data_option"]}
    answer = await sheet.send({"method": "POST", "url": f"{target}:append", "params": params, "json": body})
    updates = answer.get("updates")
    return _written(sheet, updates if isinstance(updates, dict) else {})


def _written(sheet: Sheet, data: JsonObject) -> Written:
    updated = data.get("updatedData")
    included = updated.get("values") if isinstance(updated, dict) else None
    return {
        "spreadsheet_id": sheet.spreadsheet,
        **_updated(data),
        "updated_values": included if sheet.choices["include_values_in_response"] else None,
    }


def _updated(data: JsonObject) -> Updated:
    return {
        "updated_range": data.get("updatedRange"),
        "updated_rows": data.get("updatedRows"),
        "updated_columns": data.get("updatedColumns"),
        "updated_cells": data.get("updatedCells"),
    }


async def _batch_read(sheet: Sheet) -> BatchRead:
    ranges = sheet.arguments.get("ranges")
    if not isinstance(ranges, list) or not ranges or not all(isinstance(r, str) and r for r in ranges):
        raise errors.permanent(
            "google_sheets' `ranges` must be a list of ranges in A1 notation", "BadToolCall"
        )
    params = {**_read_params(sheet.choices), "ranges": ranges}
    data = await sheet.send({"method": "GET", "url": f"{sheet.url}:batchGet", "params": params})
    value_ranges: list[ValueRange] = [
        {
            "range": found.get("range", ""),
            "major_dimension": found.get("majorDimension", sheet.choices["major_dimension"]),
            "values": found.get("values", []),
        }
        for found in objects_in(data.get("valueRanges"))
    ]
    return {"spreadsheet_id": sheet.spreadsheet, "value_ranges": value_ranges}


async def _batch_write(sheet: Sheet) -> BatchWritten:
    data = sheet.arguments.get("data")
    if not isinstance(data, list) or not data or not all(isinstance(item, dict) for item in data):
        raise errors.permanent(
            "google_sheets' `data` must be a list of {range, values, major_dimension}", "BadToolCall"
        )
    written: list[JsonValue] = []
    for item in objects_in(data):
        dimension = item.get("major_dimension") or "ROWS"
        if dimension not in CHOICES["major_dimension"]:
            raise errors.permanent(
                "google_sheets' data[].major_dimension must be ROWS or COLUMNS", "BadToolCall"
            )
        values = _rows(item.get("values"), "data[].values")
        written.append({"range": _text(item, "range"), "values": values, "majorDimension": dimension})
    include = sheet.choices["include_values_in_response"]
    body: JsonObject = {
        "valueInputOption": sheet.choices["value_input_option"],
        "data": written,
        "includeValuesInResponse": include,
    }
    if include:
        body["responseValueRenderOption"] = "FORMATTED_VALUE"
    answer = await sheet.send({"method": "POST", "url": f"{sheet.url}:batchUpdate", "json": body})
    return {
        "spreadsheet_id": sheet.spreadsheet,
        "total_updated_sheets": answer.get("totalUpdatedSheets"),
        "total_updated_rows": answer.get("totalUpdatedRows"),
        "total_updated_columns": answer.get("totalUpdatedColumns"),
        "total_updated_cells": answer.get("totalUpdatedCells"),
        "responses": [_updated(response) for response in objects_in(answer.get("responses"))],
    }


# Each method Julep declares, and what answers it.
METHODS: dict[str, Callable[[Sheet], Awaitable[Answer]]] = {
    "read_values": _read_values,
    "write_values": _write_values,
    "append_values": _append_values,
    "clear_values": _clear_values,
    "batch_read": _batch_read,
    "batch_write": _batch_write,
}


async def _access_token(service: Service, setup: JsonObject) -> str:
    """An access token for the service account, from its token endpoint."""
    if setup.get("use_julep_service") is True:
        raise errors.permanent(
            "google_sheets: `use_julep_service: true` asks for Julep's own service account, which Mint does not "
            "have: set it to false and give your service account's key file in base64 as "
            "`service_account_json` (or as the secret GOOGLE_SHEETS_SERVICE_ACCOUNT_JSON)",
            "BadToolCall",
        )
    account = _account(setup.get("service_account_json"))
    token_uri = account["token_uri"] or TOKEN_URI
    form = {"grant_type": JWT_BEARER, "assertion": assertion(account, token_uri, int(time.time()))}
    response = await service.fetch({"method": "POST", "url": token_uri, "data": form})
    body = response["json"]
    error = body.get("error") if isinstance(body, dict) else None
    if response["status_code"] >= 400 and isinstance(body, dict) and isinstance(error, str):
        detail = f"{error}: {body.get('error_description') or 'no description'}"
        raise refused_with("Google's token endpoint", response["status_code"], None, detail)
    token = answer_object("Google's token endpoint", response).get("access_token")
    if not isinstance(token, str) or not token:
        raise errors.permanent("Google's token endpoint answered no access_token", "BadAnswer")
    return token


def _account(encoded: JsonValue) -> ServiceAccount:
    """The service account's key file, decoded (base64, its padding added when missing, as Julep does)."""
    try:
        text = str(encoded or "")
        account = json.loads(base64.b64decode(text + "=" * (-len(text) % 4), validate=True))
    except (binascii.Error, ValueError):
        account = None
    fields = account if isinstance(account, dict) else {}
    email, key, key_id, token_uri = (
        fields.get(k) for k in ("client_email", "private_key", "private_key_id", "token_uri")
    )
    if not isinstance(email, str) or not isinstance(key, str):
        raise errors.permanent(
            "google_sheets' `service_account_json` must be a service account's key file (JSON with client_email "
            "and private_key) in base64",
            "BadToolCall",
        )
    return {
        "client_email": email,
        "private_key": key,
        "private_key_id": key_id if isinstance(key_id, str) else None,
        "token_uri": token_uri if isinstance(token_uri, str) else None,
    }


def assertion(account: ServiceAccount, token_uri: str, now: int) -> str:
    """The JWT Google's token endpoint exchanges for an access token, signed RS256 with the account's key."""
    try:
        key = serialization.load_pem_private_key(account["private_key"].encode(), password=None)
    except (ValueError, TypeError):
        key = None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise errors.permanent(
            "google_sheets: the key file's private_key is not an RSA key in PEM", "BadToolCall"
        )
    header: JsonObject = {
        "alg": "RS256",
        "typ": "JWT",
        **({"kid": account["private_key_id"]} if account.get("private_key_id") else {}),
    }
    claims: JsonObject = {
        "iss": account["client_email"],
        "scope": SCOPE,
        "aud": token_uri,
        "iat": now,
        "exp": now + 3600,
    }
    signing_input = f"{_b64url(header)}.{_b64url(claims)}"
    signature = key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{signing_input}.{base64.urlsafe_b64encode(signature).decode().rstrip('=')}"


def _b64url(value: JsonObject) -> str:
    return base64.urlsafe_b64encode(json.dumps(value, separators=(",", ":")).encode()).decode().rstrip("=")
