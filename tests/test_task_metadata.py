"""Metadata in a task execution (seed 000, "metadata precedence order"): expressions and templates read the
merged `metadata`, execution > task > agent; integration tools take runtime arguments from it
(`x-tool-parameters`); a null prints as nothing."""

from __future__ import annotations

from tests.helpers import create_agent, create_task, wait_for_status

AGENT = {"tier": "agent", "voice": "agent", "region": "agent", "nickname": None}
TASK = {"voice": "task", "region": "task"}
EXECUTION = {"region": "execution"}


async def _run(api, task: dict, execution_metadata: dict) -> dict:
    agent = await create_agent(api)
    patched = await api.patch(f"/agents/{agent['id']}", json={"metadata": AGENT})
    assert patched.status_code == 200, patched.text
    created = await create_task(api, agent["id"], {"metadata": TASK, **task})
    started = await api.post(
        f"/tasks/{created['id']}/executions", json={"input": {}, "metadata": execution_metadata}
    )
    assert started.status_code == 201, started.text
    return await wait_for_status(api, started.json()["id"])


async def test_expressions_and_templates_read_metadata_by_precedence(api):
    task = {
        "name": "reads metadata",
        "main": [
            {"evaluate": {"merged": "$ metadata", "region": "$ metadata['region']"}},
            {
                "evaluate": {
                    "line": "{{ metadata.tier }}/{{ metadata.voice }}/{{ metadata.region }}/{{ metadata.nickname }}."
                }
            },
            {"return": {"merged": "$ steps[0].output.merged", "line": "$ _.line"}},
        ],
    }
    execution = await _run(api, task, EXECUTION)
    assert execution["status"] == "succeeded", execution["error"]
    assert execution["output"]["merged"] == {**AGENT, **TASK, **EXECUTION}
    assert execution["output"]["line"] == "agent/task/execution/."  # a null prints as nothing, not "None"


async def test_a_template_prints_null_as_nothing(api):
    task = {"name": "null", "main": [{"evaluate": {"text": "[{{ _.get('missing') }}][{{ None }}]"}}]}
    execution = await _run(api, task, {})
    assert execution["output"] == {"text": "[][]"}, execution


async def test_an_integration_takes_its_runtime_arguments_from_the_executions_metadata(api):
    tool = {"name": "echo", "type": "integration", "integration": {"provider": "dummy", "method": "echo"}}
    task = {
        "name": "runtime arguments",
        "tools": [tool],
        "main": [{"tool": "echo", "arguments": {"text": "hi"}}],
    }
    fixed = {"x-tool-parameters": {"integration:echo": {"account": "from-execution"}}}
    execution = await _run(api, task, fixed)
    assert execution["status"] == "succeeded", execution["error"]
    assert execution["output"] == {"text": "hi", "account": "from-execution"}


async def test_an_unknown_name_beside_metadata_is_still_refused_when_the_task_is_created(api):
    agent = await create_agent(api)
    bad = {"name": "typo", "main": [{"evaluate": {"x": "$ metdata['a']"}}]}
    response = await api.post(f"/agents/{agent['id']}/tasks", json=bad)
    assert response.status_code == 422, response.text
    assert "metadata" in response.text  # the did-you-mean names it
