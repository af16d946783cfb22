"""`cloudinary`: Julep's two Cloudinary methods, as its client (Cloudinary's Python SDK) makes them.

- `media_upload`: Cloudinary's upload API (POST /v1_1/{cloud_name}/{resource_type}/upload, multipart form
  data), signed as Cloudinary documents: the parameters but `file`, `api_key` and `resource_type`, each
  `name=value` (`&` in a value as `%26`), sorted, joined by `&`, with the API secret appended, hashed with
  SHA-1 (`signature_algorithm: sha256` in setup.params for SHA-256); `signature` and `api_key` go with them.
  The secret itself is never sent. `file` is what Cloudinary fetches itself: an http(s), ftp, s3 or gs URL,
  or a data URI (`data:image/png;base64,...`). `upload_params` are the upload API's options, written as the SDK
  writes them (`tags` joined by commas, `context` as `k=v|k=v`, `transformation` and `eager` as transformation
  strings: cloudinary_transformation.py); `resource_type` (image, video, raw or auto; image by default) is in
  the path. Julep's answer is {url: the secure URL, public_id, meta_data: the rest of Cloudinary's answer,
  base64: the file (with `return_base64`)}; public_id is a random UUID when none is given, as in Julep.
- `media_edit`: no request: the delivery URL of `public_id` with `transformation` applied
  (https://res.cloudinary.com/{cloud_name}/image/upload/{transformation}/{public_id}); with `return_base64`
  the file at that URL too. Julep's answer is {transformed_url, base64}.

Downloads (`return_base64`) take api_call's egress check, size cap and deadline and follow no redirect.
setup.params may hold `upload_preset` (sent with every upload), `signature_algorithm` and `secure` (ignored:
URLs are https); the API's address is the operator's MINT_CLOUDINARY_BASE_URL.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import TypedDict

import httpx

from activities.egress import brief_repr
from activities.integrations.cloudinary_transformation import Refused, escaped, transformation
from activities.integrations.common import Service, answer_json, join
from contracts.json import JsonObject, JsonValue
from infra.temporal import errors

DEFAULT_BASE_URL = "https://api.cloudinary.com"
DELIVERY_URL = "https://res.cloudinary.com"
CLOUD_NAME = re.compile(r"[A-Za-z0-9_-]{1,100}")
REMOTE_FILE = re.compile(
    r"^(ftp:|https?:|s3:|gs:)|^data:([\w-]+/[\w-]+(\+[\w-]+)?)?(;[\w-]+=[\w-]+)*;base64,[a-zA-Z0-9/+\n=]+$"
)
RESOURCE_TYPES = ("image", "video", "raw", "auto")
SETUP_PARAMS = ("upload_preset", "signature_algorithm", "secure")
# The upload API's options sent as they are (the SDK's simple upload parameters).
SIMPLE = frozenset(
    "public_id public_id_prefix callback format type backup faces image_metadata media_metadata exif colors "
    "use_filename unique_filename display_name use_filename_as_display_name discard_original_filename "
    "filename_override invalidate notification_url eager_notification_url eager_async eval on_success proxy "
    "folder asset_folder use_asset_folder_as_public_id_prefix unique_display_name overwrite moderation "
    "raw_convert quality_override quality_analysis ocr categorization detection similarity_search "
    "visual_search background_removal upload_preset phash return_delete_token auto_tagging async "
    "cinemagraph_analysis accessibility_analysis auto_chaptering batch_id".split()
)
LISTS = frozenset({"tags", "allowed_formats"})  # joined by commas
CONTEXTS = frozenset({"context", "metadata"})  # k=v|k=v
AS_JSON = frozenset({"access_control", "regions", "auto_transcription", "responsive_breakpoints"})


class Uploaded(TypedDict):
    url: str
    public_id: JsonValue
    meta_data: JsonObject  # the rest of Cloudinary's answer
    base64: str | None


class Edited(TypedDict):
    transformed_url: str
    base64: str | None


class Call:
    """One call's service, cloud name, setup (and its `params`), arguments and `return_base64`."""

    def __init__(
        self, service: Service, cloud: str, setup: JsonObject, options: JsonObject, arguments: JsonObject
    ):
        self.service = service
        self.cloud = cloud
        self.setup = setup
        self.options = options
        self.arguments = arguments
        return_base64 = arguments.get("return_base64", False)
        if not isinstance(return_base64, bool):
            raise errors.permanent("cloudinary's `return_base64` must be true or false", "BadToolCall")
        self.return_base64 = return_base64


async def call(service: Service, method: str, setup: JsonObject, arguments: JsonObject) -> Uploaded | Edited:
    cloud = setup.get("cloudinary_cloud_name")
    if not isinstance(cloud, str) or not CLOUD_NAME.fullmatch(cloud):
        raise errors.permanent(
            f"cloudinary needs setup.cloudinary_cloud_name, your product environment's cloud name (letters, "
            f"digits, `-` and `_`), not {brief_repr(cloud)}",
            "BadToolCall",
        )
    options = setup.get("params") or {}
    if not isinstance(options, dict) or any(k not in SETUP_PARAMS for k in options):
        raise errors.permanent(
            f"cloudinary's setup.params may hold {', '.join(SETUP_PARAMS)} (the API's address is the "
            "operator's MINT_CLOUDINARY_BASE_URL)",
            "BadToolCall",
        )
    try:
        return await METHODS[method](Call(service, cloud, setup, options, arguments))
    except Refused as exc:
        raise errors.permanent(f"cloudinary: {exc}", "BadToolCall") from None


async def _upload(call: Call) -> Uploaded:
    service, cloud, setup, options, arguments = (
        call.service,
        call.cloud,
        call.setup,
        call.options,
        call.arguments,
    )
    file = arguments["file"]
    if not isinstance(file, str) or not REMOTE_FILE.match(file):
        raise errors.permanent(
            "cloudinary's `file` must be a URL Cloudinary can fetch (http, https, ftp, s3, gs) or a data URI "
            "(data:<type>;base64,...)",
            "BadToolCall",
        )
    given = arguments.get("upload_params") or {}
    if not isinstance(given, dict):
        raise errors.permanent("cloudinary's `upload_params` must be a mapping", "BadToolCall")
    resource_type = given.get("resource_type", "image")
    if resource_type not in RESOURCE_TYPES:
        raise errors.permanent(
            f"cloudinary's upload_params.resource_type must be one of {', '.join(RESOURCE_TYPES)}",
            "BadToolCall",
        )
    public_id = arguments.get("public_id") or str(uuid.uuid4())
    params = upload_params({**given, "public_id": str(public_id)}, options.get("upload_preset"))
    params = signed(params, str(setup["cloudinary_api_key"]), str(setup["cloudinary_api_secret"]), options)
    # httpx writes the multipart body (every field a plain form field); api_call's client sends it as it is.
    fields = {name: (None, value) for name, value in {**params, "file": file}.items()}
    form = httpx.Request("POST", "http://multipart.invalid/", files=fields)
    response = await service.fetch(
        {
            "method": "POST",
            "url": join(service.base_url, f"/v1_1/{cloud}/{resource_type}/upload"),
            "content": form.read(),
            "headers": {"Content-Type": form.headers["Content-Type"]},
        }
    )
    result = answer_json("Cloudinary", response)
    secure_url = result.get("secure_url") if isinstance(result, dict) else None
    if not isinstance(result, dict) or not isinstance(secure_url, str):
        raise errors.permanent("Cloudinary's answer to the upload has no secure_url", "BadAnswer")
    meta = {k: v for k, v in result.items() if k not in ("secure_url", "public_id")}
    encoded = await _base64_of(service, secure_url) if call.return_base64 else None
    return {
        "url": secure_url,
        "public_id": result.get("public_id"),
        "meta_data": meta,
        "base64": encoded,
    }


def upload_params(given: JsonObject, preset: JsonValue) -> dict[str, str]:
    """The upload API's parameters for `upload_params` (less resource_type), as the SDK writes them."""
    params: JsonObject = {"timestamp": str(int(time.time())), "upload_preset": preset}
    transformation_options: JsonObject = {}
    for name, value in given.items():
        if name == "resource_type":
            continue
        if name in SIMPLE:
            params[name] = value
        elif name in LISTS:
            params[name] = ",".join(map(str, value)) if isinstance(value, list) else value
        elif name in CONTEXTS:
            params[name] = _context(value)
        elif name in AS_JSON:
            params[name] = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
        elif name == "eager":
            params[name] = "|".join(_eager(item) for item in (value if isinstance(value, list) else [value]))
        elif name == "headers" and isinstance(value, dict):
            params[name] = "\n".join(f"{k}: {v}" for k, v in value.items())
        elif name in ("face_coordinates", "custom_coordinates") and isinstance(value, list):
            params[name] = "|".join(_cleaned(row) for row in value)
        else:  # the transformation's options (top-level ones, as the SDK takes them too)
            transformation_options[name] = value
    params["transformation"] = transformation(transformation_options) if transformation_options else None
    return {k: _cleaned(v) for k, v in params.items() if v is not None and v != ""}


def _cleaned(value: JsonValue) -> str:
    """A parameter's text, as the SDK's cleanup writes it (booleans as 1 and 0)."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, list):
        return ",".join(map(str, value))
    if isinstance(value, dict):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _context(value: JsonValue) -> JsonValue:
    if not isinstance(value, dict):
        return value

    def text(v: JsonValue) -> str:
        plain = json.dumps(v, separators=(",", ":")) if isinstance(v, list | dict) else str(v)
        return plain.replace("=", "\\=").replace("|", "\\|")

    return "|".join(f"{k}={text(v)}" for k, v in value.items())


def _eager(item: JsonValue) -> str:
    if isinstance(item, str):
        return item
    if not isinstance(item, dict):
        raise Refused("each of upload_params.eager must be a transformation (a mapping) or its text")
    options = {k: v for k, v in item.items() if k != "format"}
    written = transformation(options)
    return written + (f"/{item['format']}" if written and item.get("format") is not None else "")


def signed(params: dict[str, str], key: str, secret: str, options: JsonObject) -> dict[str, str]:
    """The parameters with Cloudinary's signature and the API key (the secret only goes into the hash)."""
    algorithm = options.get("signature_algorithm", "sha1")
    if algorithm not in ("sha1", "sha256"):
        raise errors.permanent("cloudinary's signature_algorithm must be sha1 or sha256", "BadToolCall")
    to_sign = "&".join(sorted(f"{k}={v}".replace("&", "%26") for k, v in params.items() if v))
    signature = hashlib.new(str(algorithm), (to_sign + secret).encode()).hexdigest()
    return {**params, "signature": signature, "api_key": key}


async def _edit(call: Call) -> Edited:
    arguments = call.arguments
    public_id = arguments["public_id"]
    if not isinstance(public_id, str) or not public_id or re.match(r"^https?:", public_id):
        raise errors.permanent(
            "cloudinary's `public_id` must be the public id of an asset in your product environment",
            "BadToolCall",
        )
    steps = arguments["transformation"]
    if not isinstance(steps, list | dict):
        raise errors.permanent("cloudinary's `transformation` must be a list of mappings", "BadToolCall")
    source = escaped(public_id)
    version = "v1" if "/" in source and not re.match(r"^v[0-9]+", source) else None
    parts = [DELIVERY_URL, call.cloud, "image", "upload", transformation(steps), version, source]
    url = "/".join(part for part in parts if part)
    encoded = await _base64_of(call.service, url) if call.return_base64 else None
    return {"transformed_url": url, "base64": encoded}


async def _base64_of(service: Service, url: str) -> str:
    return base64.b64encode(await service.download(url)).decode()


# Each method Julep declares, and what answers it.
METHODS: dict[str, Callable[[Call], Awaitable[Uploaded | Edited]]] = {
    "media_edit": _edit,
    "media_upload": _upload,
}
