"""Integration providers beyond tests/test_integrations.py (issue 28 item 8): `dummy`, `llama_parse`,
`cloudinary`, `google_sheets`, `browserbase`; each against a local fake of its service
(tests/integration_fakes.py) on the real stack, as the others are."""

from __future__ import annotations

import re

from tests.helpers import create_agent, run_task
from tests.test_integrations import _task


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
