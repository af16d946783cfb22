from tests.helpers import run_task


async def test_evaluate_chain_runs(api):
    task = {"name": "t", "main": [{"evaluate": {"x": "1 + 1"}}, {"evaluate": {"y": "_['x'] * 10"}}]}
    execution, rows = await run_task(api, task)
    assert execution["status"] == "succeeded", execution
    assert execution["output"] == {"y": 20}
    assert [r["type"] for r in rows] == ["init", "step", "step", "finish"]


async def test_openapi_and_healthz(stack):
    import httpx

    async with httpx.AsyncClient(base_url=stack.url) as client:
        spec = (await client.get("/openapi.json")).json()
        assert (
            "/tasks/{task_id}/executions" in spec["paths"] and "/executions/{execution_id}" in spec["paths"]
        )
        assert (await client.get("/healthz")).json() == {"status": "ok"}
