"""POST /tasks/{id}/executions with an Idempotency-Key returns the same execution for the same key."""

import asyncio

from tests.helpers import create_agent, create_task, wait_for_status

TASK = {"name": "once", "main": [{"evaluate": {"doubled": "$ _['n'] * 2"}}]}


async def _task(api):
    return await create_task(api, (await create_agent(api))["id"], TASK)


async def _post(api, task_id, body, key):
    return await api.post(f"/tasks/{task_id}/executions", json=body, headers={"Idempotency-Key": key})


async def test_same_key_same_execution(api):
    task = await _task(api)
    first = await _post(api, task["id"], {"input": {"n": 2}}, "order-1")
    second = await _post(api, task["id"], {"input": {"n": 2}}, "order-1")
    assert first.status_code == second.status_code == 201
    assert first.json()["id"] == second.json()["id"]
    await wait_for_status(api, first.json()["id"])
    listed = (await api.get(f"/tasks/{task['id']}/executions")).json()["items"]
    assert len(listed) == 1 and listed[0]["output"] == {"doubled": 4}


async def test_concurrent_requests_with_one_key_create_one_execution(api):
    task = await _task(api)
    responses = await asyncio.gather(
        *[_post(api, task["id"], {"input": {"n": 1}}, "burst") for _ in range(8)]
    )
    assert {r.status_code for r in responses} == {201}
    assert len({r.json()["id"] for r in responses}) == 1
    assert len((await api.get(f"/tasks/{task['id']}/executions")).json()["items"]) == 1


async def test_different_keys_and_no_key_make_new_executions(api):
    task = await _task(api)
    ids = {
        (await _post(api, task["id"], {"input": {"n": 1}}, "a")).json()["id"],
        (await _post(api, task["id"], {"input": {"n": 1}}, "b")).json()["id"],
        (await api.post(f"/tasks/{task['id']}/executions", json={"input": {"n": 1}})).json()["id"],
    }
    assert len(ids) == 3


async def test_reusing_a_key_with_another_input_is_a_conflict(api):
    task = await _task(api)
    assert (await _post(api, task["id"], {"input": {"n": 1}}, "k")).status_code == 201
    response = await _post(api, task["id"], {"input": {"n": 9}}, "k")
    assert response.status_code == 409 and "different input" in response.json()["error"]["message"]


async def test_keys_are_per_developer(api, stack, store):
    import httpx

    task = await _task(api)
    first = await _post(api, task["id"], {"input": {"n": 1}}, "shared")
    _, other_key = await store.create_developer("other")
    async with httpx.AsyncClient(
        base_url=stack.url, headers={"Authorization": f"Bearer {other_key}"}
    ) as other:
        response = await _post(other, task["id"], {"input": {"n": 1}}, "shared")
    assert first.status_code == 201 and response.status_code == 404
