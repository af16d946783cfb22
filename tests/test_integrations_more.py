"""Integration providers beyond tests/test_integrations.py: `dummy`, `llama_parse`,
`cloudinary`, `google_sheets`, `browserbase`; each against a local fake of its service
(tests/integration_fakes.py) on the real stack, as the others are."""

from __future__ import annotations

import base64
import json
import os
import re
from typing import Any
from urllib.parse import urlsplit

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from temporalio.exceptions import ApplicationError

from activities.egress import EgressPolicy
from activities.integrations import Service, browserbase, cloudinary
from tests.helpers import create_agent, run_task
from tests.integration_fakes import (
    BAD_KEY,
    CLOUDINARY_UPLOADS,
    LLAMA_JOBS,
    PNG,
    SHEETS,
    SLOW_SECONDS,
    sheets_key_file,
)
from tests.test_integrations import ProviderCase, _no_http, _task


async def test_dummy_answers_the_calls_arguments_whatever_its_method_and_setup(mapi):
    integration = {
        "provider": "dummy",
        "method": "anything",
        "setup": {"whatever": 1},
        "arguments": {"preset": "p", "overridden": "tool"},
    }
    arguments = {"text": "hello", "n": 3, "nested": {"a": [1, 2]}, "overridden": "step"}
    execution, _ = await run_task(mapi, _task(integration, arguments))
    assert execution["status"] == "succeeded", execution["error"]
    assert execution["output"] == {**arguments, "preset": "p"}


async def test_dummy_without_a_method_or_arguments_answers_an_empty_mapping(mapi):
    execution, _ = await run_task(mapi, _task({"provider": "dummy"}, {}))
    assert execution["status"] == "succeeded", execution["error"]
    assert execution["output"] == {}


async def test_dummys_setup_must_still_be_a_mapping(mapi):
    agent = await create_agent(mapi)
    task = _task({"provider": "dummy", "setup": "x"}, {})
    response = await mapi.post(f"/agents/{agent['id']}/tasks", json=task)
    assert response.status_code == 422, response.text
    assert re.search(r"provider 'dummy': `setup` must be a mapping", response.text)


# --- the providers' answers, error answers and timeouts (as tests/test_integrations.py's CASES) ----------

CLOUDINARY = {
    "cloudinary_api_key": "cl-key-1",
    "cloudinary_api_secret": "cl-secret-7e1f0a",
    "cloudinary_cloud_name": "demo",
}
DOC = base64.b64encode(b"Mint\nDurable agent workflows.").decode()
CASES = {
    "llama_parse": ProviderCase(
        {"provider": "llama_parse", "setup": {"llamaparse_api_key": "llx-key-1"}},
        {"file": DOC, "filename": "readme.txt", "base64": True},
        lambda out: (
            [d["text"] for d in out["documents"]] == ["Mint", "Durable agent workflows."]
            and out["documents"][0]["metadata"] == {"file_name": "readme.txt"}
        ),
        r"LlamaParse's job job-\S+ ended ERROR: the file is broken \(UNSUPPORTED_FILE\)",
        refusing_arguments={"filename": "broken.txt"},
        slow_arguments={"filename": "slow.txt"},
    ),
    "cloudinary": ProviderCase(
        {"provider": "cloudinary", "method": "media_upload", "setup": CLOUDINARY},
        {
            "file": "https://example.com/v.mp4",
            "public_id": "clip",
            "upload_params": {"resource_type": "video"},
        },
        lambda out: (
            out["url"].endswith("/cloudinary-res/demo/video/upload/v1700000000/clip.mp4")
            and out["public_id"] == "clip"
            and out["meta_data"]["resource_type"] == "video"
            and out["meta_data"]["api_key"] == "[secret cloudinary_api_key]"
            and out["base64"] is None
        ),
        r"Cloudinary refused the call \(400\): Resource not found - https://example.com/missing.mp4",
        refusing_arguments={"file": "https://example.com/missing.mp4"},
        slow_arguments={"public_id": "slow"},
    ),
    "browserbase": ProviderCase(
        {
            "provider": "browserbase",
            "method": "create_session",
            "setup": {"api_key": "bb-key-1", "project_id": "p1"},
        },
        {"browser_settings": {"viewport": {"width": 1024, "height": 768}}},
        lambda out: (
            out["id"].startswith("bb-")
            and out["connect_url"] == f"wss://connect.browserbase.com?signingKey={out['id']}"
            and out["status"] == "RUNNING"
            and out["projectId"] == "p1"
            and out["keepAlive"] is False
        ),
        r"Browserbase refused the call \(404\): Project not found",
        refusing_arguments={"project_id": "missing"},
        slow_arguments={"project_id": "slow"},
    ),
}


@pytest.mark.parametrize("provider", CASES)
async def test_a_provider_answers_in_julep_shape(provider, mapi, integration_fakes):
    case = CASES[provider]
    execution, _ = await run_task(mapi, _task(case.integration, case.arguments))
    assert execution["status"] == "succeeded", execution["error"]
    assert case.output(execution["output"]), execution["output"]


@pytest.mark.parametrize("provider", CASES)
async def test_the_services_error_answer_fails_the_step_with_its_message(provider, mapi):
    case = CASES[provider]
    integration = {**case.integration, "setup": {**case.integration.get("setup", {}), **case.refusing_setup}}
    execution, _ = await run_task(mapi, _task(integration, {**case.arguments, **case.refusing_arguments}))
    assert execution["status"] == "failed"
    assert re.search(case.error, execution["error"]), execution["error"]


@pytest.mark.parametrize("provider", CASES)
async def test_a_service_slower_than_the_steps_timeout_fails_the_step(provider, mapi):
    case = CASES[provider]
    arguments = {**case.arguments, **case.slow_arguments}
    task = _task(case.integration, arguments, timeout=SLOW_SECONDS / 3, retry={"max_attempts": 1})
    execution, _ = await run_task(mapi, task)
    assert execution["status"] == "failed"
    assert "did not finish within its timeout" in execution["error"], execution["error"]


# --- llama_parse -------------------------------------------------------------------------------------------


def _sent(fakes: Any, before: int, path: str) -> list[Any]:
    return [r for r in fakes.requests[before:] if urlsplit(r.path).path == path]


async def test_llama_parse_uploads_the_file_with_its_options_and_polls_the_job(mapi, integration_fakes):
    setup = {
        "llamaparse_api_key": "llx-key-2",
        "params": {"language": "fr", "num_workers": 3, "fast_mode": True},
    }
    name = f"options-{os.urandom(4).hex()}.txt"
    arguments = {"file": DOC, "filename": name, "base64": True, "params": {"fast_mode": False}}
    before = len(integration_fakes.requests)
    execution, _ = await run_task(mapi, _task({"provider": "llama_parse", "setup": setup}, arguments))
    assert execution["status"] == "succeeded", execution["error"]
    (upload,) = _sent(integration_fakes, before, "/api/parsing/upload")
    assert upload.headers["Authorization"] == "Bearer llx-key-2"
    fields = next(j["fields"] for j in LLAMA_JOBS.values() if j["name"] == name)
    assert fields["language"] == "fr" and fields["fast_mode"] == "false" and "num_workers" not in fields
    polls = [
        r for r in integration_fakes.requests[before:] if re.fullmatch(r"/api/parsing/job/[^/]+", r.path)
    ]
    assert len(polls) == 2  # PENDING, then SUCCESS


async def test_llama_parse_sends_a_url_for_llama_parse_to_download(mapi, integration_fakes):
    integration = {"provider": "llama_parse", "setup": {"llamaparse_api_key": "llx-key-3"}}
    urls = ["https://arxiv.org/pdf/1", "https://arxiv.org/pdf/2"]
    arguments = {"file": urls, "params": {"result_type": "markdown", "split_by_page": False}}
    execution, _ = await run_task(mapi, _task(integration, arguments))
    assert execution["status"] == "succeeded", execution["error"]
    assert [d["text"] for d in execution["output"]["documents"]] == [
        f"# Page 1 of {url}\n---\n# Page 2 of {url}" for url in urls
    ]
    assert execution["output"]["documents"][0]["metadata"] == {}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"file": "a.pdf"}, r"`file` must be the document's http\(s\) URL, or its bytes in base64"),
        ({"file": "not base64!", "base64": True}, r"`file` must be base64 when `base64` is true"),
        (
            {"file": "https://x.example/a.pdf", "params": {"base_url": "http://evil"}},
            r"may not set 'base_url'",
        ),
        (
            {"file": "https://x.example/a.pdf", "params": {"result_type": "json"}},
            r"result_type must be text or",
        ),
        ({"file": [], "base64": True}, r"`file` must be text, or a list of 1 to 16"),
    ],
)
async def test_llama_parse_refuses_bad_input_naming_it(arguments, message, mapi):
    integration = {"provider": "llama_parse", "setup": {"llamaparse_api_key": "llx-key-4"}}
    execution, _ = await run_task(mapi, _task(integration, arguments))
    assert execution["status"] == "failed"
    assert re.search(message, execution["error"]), execution["error"]


async def test_llama_parse_uses_the_owners_llama_api_key_and_masks_it(mapi, integration_fakes):
    key = "llx-owner-secret-5c1d9a"
    assert (await mapi.post("/secrets", json={"name": "LLAMA_API_KEY", "value": key})).status_code == 201
    arguments = {"file": "https://x.example/a.pdf", "params": {"echo": "key"}}
    execution, rows = await run_task(mapi, _task({"provider": "llama_parse"}, arguments))
    assert execution["status"] == "succeeded", execution["error"]
    assert execution["output"]["documents"][-1]["text"].endswith("key [secret LLAMA_API_KEY]")
    assert key not in json.dumps([execution, rows])


# --- cloudinary --------------------------------------------------------------------------------------------


def test_cloudinarys_signature_is_the_documented_one():
    """Cloudinary's own example (its authentication signatures page): these parameters and the secret `abcd`."""
    params = {
        "eager": "w_400,h_300,c_pad|w_260,h_200,c_crop",
        "public_id": "sample_image",
        "timestamp": "1315060510",
    }
    signed = cloudinary.signed(params, "key", "abcd", {})
    assert signed["signature"] == "bfd09f95f331f558cbd1320e67aa8d488770583e"
    assert signed["api_key"] == "key"


async def test_cloudinary_uploads_the_params_as_the_sdk_writes_them_signed(mapi, integration_fakes):
    public_id = f"params-{os.urandom(4).hex()}"
    upload_params = {
        "tags": ["a", "b"],
        "context": {"alt": "a=b", "caption": "x|y"},
        "overwrite": True,
        "folder": "clips",
        "transformation": [
            {"aspect_ratio": "1.0", "width": "250", "crop": "fill"},
            {"overlay": {"url": "https://x.example/l.png"}, "flags": "layer_apply"},
        ],
        "eager": [{"width": 400, "height": 300, "crop": "pad", "format": "jpg"}],
    }
    arguments = {"file": "https://example.com/v.png", "public_id": public_id, "upload_params": upload_params}
    integration = {"provider": "cloudinary", "method": "media_upload", "setup": CLOUDINARY}
    before = len(integration_fakes.requests)
    execution, rows = await run_task(mapi, _task(integration, arguments))
    assert execution["status"] == "succeeded", execution["error"]
    fields = CLOUDINARY_UPLOADS[public_id]
    assert fields["tags"] == "a,b" and fields["overwrite"] == "1" and fields["folder"] == "clips"
    assert fields["context"] == "alt=a\\=b|caption=x\\|y"
    overlay = base64.urlsafe_b64encode(b"https://x.example/l.png").decode()
    assert fields["transformation"] == f"ar_1.0,c_fill,w_250/fl_layer_apply,l_fetch:{overlay}"
    assert fields["eager"] == "c_pad,h_300,w_400/jpg"
    (upload,) = _sent(integration_fakes, before, "/v1_1/demo/image/upload")
    assert b"cl-secret-7e1f0a" not in upload.body  # the secret only goes into the signature
    assert "cl-secret-7e1f0a" not in json.dumps(rows)


async def test_cloudinary_answers_the_uploaded_file_in_base64(mapi):
    arguments = {"file": "data:image/png;base64,iVBORw0KGgo=", "public_id": "b64", "return_base64": True}
    integration = {"provider": "cloudinary", "method": "media_upload", "setup": CLOUDINARY}
    execution, _ = await run_task(mapi, _task(integration, arguments))
    assert execution["status"] == "succeeded", execution["error"]
    assert (
        base64.b64decode(execution["output"]["base64"])
        == PNG + b"/cloudinary-res/demo/image/upload/v1700000000/b64.png"
    )


async def test_cloudinary_media_edit_answers_the_transformed_url(mapi):
    transformation = [{"crop": "fill", "width": 250, "gravity": "auto"}, {"effect": "sepia"}]
    arguments = {"public_id": "folder/my photo", "transformation": transformation}
    integration = {"provider": "cloudinary", "setup": CLOUDINARY}  # media_edit: Julep's first method
    execution, _ = await run_task(mapi, _task(integration, arguments))
    assert execution["status"] == "succeeded", execution["error"]
    assert execution["output"] == {
        "transformed_url": "https://res.cloudinary.com/demo/image/upload/c_fill,g_auto,w_250/e_sepia/v1/folder/my%20photo",
        "base64": None,
    }


async def test_cloudinary_media_edit_downloads_the_transformed_file_when_asked():
    asked = []

    async def download(url: str) -> bytes:
        asked.append(url)
        return PNG

    service = Service(
        cloudinary.DEFAULT_BASE_URL, _no_http, EgressPolicy(), deadline=5, key="k", download=download
    )
    arguments = {"public_id": "sample", "transformation": [{"width": 100}], "return_base64": True}
    answer = await cloudinary.call(service, "media_edit", CLOUDINARY, arguments)
    assert asked == ["https://res.cloudinary.com/demo/image/upload/w_100/sample"]
    assert answer == {"transformed_url": asked[0], "base64": base64.b64encode(PNG).decode()}


@pytest.mark.parametrize(
    ("method", "arguments", "setup", "message"),
    [
        ("media_upload", {"file": "/etc/passwd"}, {}, r"`file` must be a URL Cloudinary can fetch"),
        (
            "media_upload",
            {"file": "https://x/a.png", "upload_params": {"bogus": 1}},
            {},
            r"transformation option 'bogus'",
        ),
        (
            "media_upload",
            {"file": "https://x/a.png", "upload_params": {"resource_type": "doc"}},
            {},
            r"resource_type must be one of",
        ),
        (
            "media_upload",
            {"file": "https://x/a.png"},
            {"cloudinary_cloud_name": "demo/../x"},
            r"needs setup.cloudinary_cloud_name",
        ),
        (
            "media_upload",
            {"file": "https://x/a.png"},
            {"params": {"upload_prefix": "http://evil"}},
            r"setup.params may hold",
        ),
        (
            "media_edit",
            {"public_id": "p", "transformation": [{"width": [1]}]},
            {},
            r"option 'width' must be text or a number",
        ),
        (
            "media_edit",
            {"public_id": "https://x/a.png", "transformation": []},
            {},
            r"`public_id` must be the public id",
        ),
    ],
)
async def test_cloudinary_refuses_bad_input_naming_it(method, arguments, setup, message, mapi):
    integration = {"provider": "cloudinary", "method": method, "setup": {**CLOUDINARY, **setup}}
    execution, _ = await run_task(mapi, _task(integration, arguments))
    assert execution["status"] == "failed"
    assert re.search(message, execution["error"]), execution["error"]


async def test_cloudinary_without_its_secret_uses_the_owners_and_a_wrong_one_is_refused(mapi):
    setup = {k: v for k, v in CLOUDINARY.items() if k != "cloudinary_api_secret"}
    integration = {"provider": "cloudinary", "method": "media_upload", "setup": setup}
    execution, _ = await run_task(mapi, _task(integration, {"file": "https://example.com/a.png"}))
    assert execution["status"] == "failed"
    assert "no secret named CLOUDINARY_API_SECRET" in execution["error"], execution["error"]
    integration["setup"] = {**setup, "cloudinary_api_secret": BAD_KEY}
    execution, _ = await run_task(mapi, _task(integration, {"file": "https://example.com/a.png"}))
    assert re.search(r"Cloudinary refused the call \(401\): Invalid Signature", execution["error"]), (
        execution["error"]
    )


# --- google_sheets -----------------------------------------------------------------------------------------


def _sheets(fakes: Any, method: str, **setup: Any) -> dict[str, Any]:
    key_file = sheets_key_file(fakes.http.url)
    return {
        "provider": "google_sheets",
        "method": method,
        "setup": {"use_julep_service": False, "service_account_json": key_file, **setup},
    }


async def test_google_sheets_writes_reads_appends_and_clears_through_the_sheets_api(mapi, integration_fakes):
    book = f"book{os.urandom(4).hex()}"
    methods = ("write_values", "read_values", "append_values", "batch_read", "clear_values", "batch_write")
    tools = [
        {"name": method, "type": "integration", "integration": _sheets(integration_fakes, method)}
        for method in methods
    ]
    rows = [["name", "age"], ["Ada", 36]]
    main = [
        {
            "tool": "write_values",
            "arguments": {"spreadsheet_id": book, "range": "Sheet1!A1:B2", "values": rows},
        },
        {"tool": "read_values", "arguments": {"spreadsheet_id": book, "range": "Sheet1!A1:B2"}},
        {
            "tool": "append_values",
            "arguments": {
                "spreadsheet_id": book,
                "range": "Sheet1!A1:B2",
                "values": [["Alan", 41]],
                "include_values_in_response": True,
            },
        },
        {"tool": "batch_read", "arguments": {"spreadsheet_id": book, "ranges": ["Sheet1!A1:B2", "Other!A1"]}},
        {"tool": "clear_values", "arguments": {"spreadsheet_id": book, "range": "Sheet1!A1:B2"}},
        {
            "tool": "batch_write",
            "arguments": {"spreadsheet_id": book, "data": [{"range": "Other!A1", "values": [["x"]]}]},
        },
        {"return": {"all": "$ [steps[i].output for i in range(6)]"}},
    ]
    execution, _ = await run_task(mapi, {"name": "sheets", "tools": tools, "main": main})
    assert execution["status"] == "succeeded", execution["error"]
    write, read, append, batch, clear, batch_write = execution["output"]["all"]
    assert write == {
        "spreadsheet_id": book,
        "updated_range": "Sheet1!A1:B2",
        "updated_rows": 2,
        "updated_columns": 2,
        "updated_cells": 4,
        "updated_values": None,
    }
    assert read == {"range": "Sheet1!A1:B2", "major_dimension": "ROWS", "values": rows}
    assert append["updated_rows"] == 1 and append["updated_values"] == [["Alan", "41"]]
    assert [r["values"] for r in batch["value_ranges"]] == [[*rows, ["Alan", 41]], []]
    assert clear == {"spreadsheet_id": book, "cleared_range": "Sheet1!A1:B2"}
    assert (
        batch_write["total_updated_cells"] == 1 and batch_write["responses"][0]["updated_range"] == "Other!A1"
    )
    assert SHEETS[book] == {"Other!A1": [["x"]]}


@pytest.mark.parametrize(
    ("setup", "arguments", "message"),
    [
        (
            {},
            {"spreadsheet_id": "missing"},
            r"Google Sheets refused the call \(404\): Requested entity was not found",
        ),
        (
            "other key",
            {},
            r"Google's token endpoint refused the call \(400\): invalid_grant: Invalid JWT Signature",
        ),
        ({"use_julep_service": True}, {}, r"Julep's own service account, which Mint does not have"),
        ({"service_account_json": "bm90IGpzb24="}, {}, r"must be a service account's key file"),
        ({}, {"major_dimension": "DIAGONAL"}, r"`major_dimension` must be one of ROWS, COLUMNS"),
        ({}, {"spreadsheet_id": "a/../b"}, r"`spreadsheet_id` must be a spreadsheet's id"),
    ],
)
async def test_google_sheets_refusals_name_their_cause(setup, arguments, message, mapi, integration_fakes):
    integration = _sheets(integration_fakes, "read_values")
    if setup == "other key":
        other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        setup = {"service_account_json": sheets_key_file(integration_fakes.http.url, other)}
    integration["setup"].update(setup)
    execution, _ = await run_task(
        mapi, _task(integration, {"spreadsheet_id": "b1", "range": "A1", **arguments})
    )
    assert execution["status"] == "failed"
    assert re.search(message, execution["error"]), execution["error"]


async def test_google_sheets_slower_than_the_steps_timeout_fails_the_step(mapi, integration_fakes):
    task = _task(
        _sheets(integration_fakes, "read_values"),
        {"spreadsheet_id": "slow", "range": "A1"},
        timeout=SLOW_SECONDS / 3,
        retry={"max_attempts": 1},
    )
    execution, _ = await run_task(mapi, task)
    assert execution["status"] == "failed"
    assert "did not finish within its timeout" in execution["error"], execution["error"]


async def test_google_sheets_without_a_key_file_uses_the_owners_secret(mapi):
    integration = {
        "provider": "google_sheets",
        "method": "clear_values",
        "setup": {"use_julep_service": False},
    }
    execution, _ = await run_task(mapi, _task(integration, {"spreadsheet_id": "b1", "range": "A1"}))
    assert execution["status"] == "failed"
    assert "no secret named GOOGLE_SHEETS_SERVICE_ACCOUNT_JSON" in execution["error"], execution["error"]


# --- browserbase -------------------------------------------------------------------------------------------


async def test_browserbase_creates_reads_and_releases_a_session(mapi):
    setup = {"api_key": "bb-key-2", "project_id": "p2"}
    methods = ("create_session", "get_session", "get_live_urls", "list_sessions", "complete_session")
    tools = [
        {
            "name": m,
            "type": "integration",
            "integration": {"provider": "browserbase", "method": m, "setup": setup},
        }
        for m in methods
    ]
    main = [
        {"tool": "create_session", "arguments": {"project_id": "p2"}},
        {"tool": "get_session", "arguments": {"id": "$ steps[0].output.id"}},
        {"tool": "get_live_urls", "arguments": {"id": "$ steps[0].output.id"}},
        {"tool": "complete_session", "arguments": {"id": "$ steps[0].output.id"}},
        {"tool": "list_sessions", "arguments": {"status": "COMPLETED"}},
        {"tool": "complete_session", "arguments": {"id": "no-such-session"}},
        {"return": {"all": "$ [steps[i].output for i in range(6)]", "id": "$ steps[0].output.id"}},
    ]
    execution, _ = await run_task(mapi, {"name": "browser", "tools": tools, "main": main})
    assert execution["status"] == "succeeded", execution["error"]
    created, got, live, completed, listed, not_found = execution["output"]["all"]
    session = execution["output"]["id"]
    assert got == {k: v for k, v in created.items() if k != "connect_url"}
    assert (
        live["urls"]["debuggerUrl"].endswith(f"/debug/{session}") and live["urls"]["pages"][0]["id"] == "p1"
    )
    assert completed == {"success": True} and not_found == {"success": False}
    assert session in [s["id"] for s in listed["sessions"]]
    assert all(s["status"] == "COMPLETED" for s in listed["sessions"])


async def test_browserbase_installs_an_extension_from_a_github_tag():
    downloaded, sent = [], []

    async def download(url: str) -> bytes:
        downloaded.append(url)
        return b"PK\x03\x04 zip"

    async def fetch(spec: dict[str, Any]) -> dict[str, Any]:
        sent.append(spec)
        return {"status_code": 200, "json": {"id": "ext-1"}, "content": "{}", "headers": {}}

    service = Service(
        "https://api.browserbase.com", fetch, EgressPolicy(), deadline=5, key="k", download=download
    )
    arguments = {"repository_name": "julep-ai/ext", "ref": "v1.0"}
    answer = await browserbase.call(service, "install_extension_from_github", {"api_key": "k"}, arguments)
    assert answer == {"id": "ext-1"}
    assert downloaded == ["https://github.com/julep-ai/ext/archive/refs/tags/v1.0.zip"]
    assert (
        sent[0]["url"] == "https://api.browserbase.com/v1/extensions"
        and b"PK\x03\x04 zip" in sent[0]["content"]
    )
    for bad in ({"repository_name": "a/../b", "ref": "v1"}, {"repository_name": "a/b", "ref": None}):
        with pytest.raises(ApplicationError) as refused:
            await browserbase.call(service, "install_extension_from_github", {"api_key": "k"}, bad)
        assert refused.value.type == "BadToolCall"


@pytest.mark.parametrize(
    ("method", "arguments", "message"),
    [
        ("get_session", {"id": "../projects"}, r"`id` must be a session id"),
        ("list_sessions", {"status": "SLEEPING"}, r"`status` must be one of RUNNING"),
        ("create_session", {"browser_settings": "big"}, r"`browser_settings` must be a mapping"),
    ],
)
async def test_browserbase_refuses_bad_input_naming_it(method, arguments, message, mapi):
    integration = {
        "provider": "browserbase",
        "method": method,
        "setup": {"api_key": "bb-key-3", "project_id": "p"},
    }
    execution, _ = await run_task(mapi, _task(integration, arguments))
    assert execution["status"] == "failed"
    assert re.search(message, execution["error"]), execution["error"]
