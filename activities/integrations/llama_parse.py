"""`llama_parse`: parse documents with LlamaParse's API, as Julep's LlamaParse client does: upload each file
(POST /api/parsing/upload: the bytes as multipart form data, or an `input_url` LlamaParse downloads itself,
with the parsing options as form fields and the key as a bearer token), poll the job (GET
/api/parsing/job/{id}) until it is no longer PENDING, and fetch its result (GET
/api/parsing/job/{id}/result/{text|markdown}).

`file` is the document's http(s) URL, or its bytes in base64 with `base64: true` (or a list of either, at
most MAX_FILES); `params` (setup's, then the step's over them) are LlamaParse's options: the client's own
(`result_type`, `split_by_page`, `page_separator`, `organization_id`, `project_id`) are used here, the ones
that only tune Julep's client (`num_workers`, `check_interval`, `verbose`, ...) are ignored, and the rest are
sent as form fields; `api_key` and `base_url` are refused (the key is `llamaparse_api_key`, the address the
operator's MINT_LLAMA_PARSE_BASE_URL). Polling waits 1 s, then 1 s longer each time up to 5 s, and ends when
the call's deadline would pass. Julep's answer is {documents: [{id_, text, metadata}]}: one per page of each
file (pages split at the page separator) unless `split_by_page` is false.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import mimetypes
import re
import uuid
from typing import TypedDict
from urllib.parse import urlsplit

import httpx

from activities.integrations.common import Service, answer_object, join
from contracts.calls import ApiCallRequest
from contracts.json import JsonObject, JsonValue
from infra.temporal import errors

DEFAULT_BASE_URL = "https://api.cloud.llamaindex.ai"
METHODS = ("parse",)
MAX_FILES = 16
SEPARATOR = "\n---\n"  # LlamaParse's default page separator
RESULT_TYPES = ("text", "markdown")
# Options of Julep's client (the llama_parse package) that tune only the client: not sent.
CLIENT_ONLY = frozenset(
    {
        "num_workers",
        "check_interval",
        "max_check_interval",
        "backoff_pattern",
        "max_timeout",
        "verbose",
        "show_progress",
        "ignore_errors",
        "partition_pages",
    }
)
USED_HERE = frozenset({"result_type", "split_by_page", "organization_id", "project_id"})
REFUSED = {
    "api_key": "the key is setup's `llamaparse_api_key`",
    "base_url": "the address is the operator's MINT_LLAMA_PARSE_BASE_URL",
    "custom_client": "Mint's own client calls LlamaParse",
}
FIRST_WAIT, LONGEST_WAIT = 1.0, 5.0
JOB_ID = re.compile(r"[A-Za-z0-9_-]{1,100}")


class FileName(TypedDict, total=False):
    file_name: str


class Document(TypedDict):
    id_: str
    text: str
    metadata: FileName


class Answer(TypedDict):
    documents: list[Document]


async def call(service: Service, method: str, setup: JsonObject, arguments: JsonObject) -> Answer:
    ends = asyncio.get_running_loop().time() + service.deadline
    options = _options(setup.get("params"), arguments.get("params"))
    files = _files(arguments)
    filename = arguments.get("filename")
    if filename is not None and not isinstance(filename, str):
        raise errors.permanent("llama_parse's `filename` must be text", "BadToolCall")
    key = str(setup["llamaparse_api_key"])
    try:  # the files in parallel, as Julep's client parses them; the first error ends them all
        async with asyncio.TaskGroup() as group:
            jobs = [group.create_task(_parse(service, key, f, filename, options, ends)) for f in files]
    except BaseExceptionGroup as failed:
        raise failed.exceptions[0] from None
    return {"documents": [document for job in jobs for document in job.result()]}


def _options(from_setup: JsonValue, from_step: JsonValue) -> JsonObject:
    options: JsonObject = {}
    for where, given in (("setup.params", from_setup), ("params", from_step)):
        if isinstance(given, dict):
            options.update(given)
        elif given is not None:
            raise errors.permanent(
                f"llama_parse's `{where}` must be a mapping of LlamaParse's options", "BadToolCall"
            )
    for name, why in REFUSED.items():
        if name in options:
            raise errors.permanent(f"llama_parse's params may not set {name!r}: {why}", "BadToolCall")
    if options.get("result_type", "text") not in RESULT_TYPES:
        raise errors.permanent(
            f"llama_parse's params.result_type must be text or markdown, not {options['result_type']!r}",
            "BadToolCall",
        )
    return options


def _files(arguments: JsonObject) -> list[str | bytes]:
    """Each file as the URL LlamaParse downloads (str) or the bytes to upload."""
    raw = arguments["file"]
    given = raw if isinstance(raw, list) else [raw]
    items = [item for item in given if isinstance(item, str)]
    encoded = arguments.get("base64", False)
    if not isinstance(encoded, bool):
        raise errors.permanent("llama_parse's `base64` must be true or false", "BadToolCall")
    if not items or len(items) > MAX_FILES or len(items) != len(given):
        raise errors.permanent(
            f"llama_parse's `file` must be text, or a list of 1 to {MAX_FILES} texts", "BadToolCall"
        )
    if encoded:
        try:
            return [base64.b64decode(item, validate=True) for item in items]
        except (binascii.Error, ValueError):
            raise errors.permanent(
                "llama_parse's `file` must be base64 when `base64` is true", "BadToolCall"
            ) from None
    for item in items:
        parts = urlsplit(item)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise errors.permanent(
                "llama_parse's `file` must be the document's http(s) URL, or its bytes in base64 with "
                "`base64: true`",
                "BadToolCall",
            )
    return list(items)


async def _parse(
    service: Service, key: str, file: str | bytes, filename: str | None, options: JsonObject, ends: float
) -> list[Document]:
    headers = {"Authorization": f"Bearer {key}"}
    metadata: FileName = {}
    if isinstance(file, bytes):  # (an upload needs a name: Julep's client makes one up)
        metadata["file_name"] = filename or str(uuid.uuid4())
    elif filename:
        metadata["file_name"] = filename
    job = await _upload(service, headers, file, metadata.get("file_name"), options)
    await _wait(service, headers, job, ends)
    result_type = options.get("result_type", "text")
    response = await service.fetch(
        {
            "method": "GET",
            "url": join(service.base_url, f"/api/parsing/job/{job}/result/{result_type}"),
            "headers": headers,
        }
    )
    text = answer_object("LlamaParse", response).get(str(result_type))
    if not isinstance(text, str):
        raise errors.permanent(f"LlamaParse's result of job {job} has no {result_type}", "BadAnswer")
    separator = str(options.get("page_separator") or SEPARATOR)
    pages = text.split(separator) if options.get("split_by_page", True) else [text]
    return [
        {
            "id_": str(uuid.uuid5(uuid.NAMESPACE_URL, f"llama-parse:{job}/{i}")),
            "text": page,
            "metadata": metadata,
        }
        for i, page in enumerate(pages)
    ]


async def _upload(
    service: Service, headers: dict[str, str], file: str | bytes, filename: str | None, options: JsonObject
) -> str:
    fields = {"from_python_package": "true", "language": "en"}
    for name, value in options.items():
        if name not in CLIENT_ONLY and name not in USED_HERE and value is not None:
            fields[name] = _field(value)
    query = {k: str(options[k]) for k in ("organization_id", "project_id") if options.get(k)}
    request: ApiCallRequest = {
        "method": "POST",
        "url": join(service.base_url, "/api/parsing/upload"),
        "params": query or None,
        "headers": headers,
    }
    if isinstance(file, str):
        request["data"] = {**fields, "input_url": file}
    else:
        name = filename or "document"
        # httpx writes the multipart body; api_call's client then sends it as it is.
        form = httpx.Request(
            "POST",
            "http://multipart.invalid/",
            data=fields,
            files={"file": (name, file, mimetypes.guess_type(name)[0] or "application/octet-stream")},
        )
        request["content"] = form.read()
        request["headers"] = {**headers, "Content-Type": form.headers["Content-Type"]}
    job = answer_object("LlamaParse", await service.fetch(request)).get("id")
    if not isinstance(job, str) or not JOB_ID.fullmatch(job):  # (it goes into the next requests' paths)
        raise errors.permanent("LlamaParse's answer to the upload has no job id", "BadAnswer")
    return job


def _field(value: JsonValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return json.dumps(value)


async def _wait(service: Service, headers: dict[str, str], job: str, ends: float) -> None:
    """Polls the job until it is done; an error when it failed, or when the deadline would pass first."""
    loop, interval = asyncio.get_running_loop(), FIRST_WAIT
    while True:
        if loop.time() + interval >= ends:
            raise errors.transient(
                f"the call did not finish within its timeout of {service.deadline:g} seconds: LlamaParse's "
                f"job {job} was still pending",
                "IntegrationTimeout",
            )
        await asyncio.sleep(interval)
        url = join(service.base_url, f"/api/parsing/job/{job}")
        status = answer_object(
            "LlamaParse", await service.fetch({"method": "GET", "url": url, "headers": headers})
        )
        state = status.get("status")
        if state == "SUCCESS":
            return
        if state != "PENDING":
            code, message = status.get("error_code"), status.get("error_message")
            raise errors.permanent(
                f"LlamaParse's job {job} ended {state}: {message or 'no message'} ({code or 'no error code'})",
                "IntegrationRefused",
            )
        interval = min(interval + 1, LONGEST_WAIT)
