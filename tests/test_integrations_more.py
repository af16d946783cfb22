"""Integration providers beyond tests/test_integrations.py (issue 28 item 8): `dummy`, `llama_parse`,
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

from tests.helpers import create_agent, run_task
from tests.integration_fakes import LLAMA_JOBS, SLOW_SECONDS
from tests.test_integrations import ProviderCase, _task


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
