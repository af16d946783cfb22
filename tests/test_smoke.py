from tests.helpers import run_task


async def test_evaluate_chain_runs(api):
    task = {"name": "t", "main": [{"evaluate": {"x": "1 + 1"}}, {"evaluate": {"y": "_['x'] * 10"}}]}
    execution, rows = await run_task(api, task)
    assert execution["status"] == "succeeded", execution
    assert execution["output"] == {"y": 20}
    assert [r["type"] for r in rows] == ["init", "step", "step", "finish"]
