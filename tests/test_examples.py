"""The examples in examples/ run as documented."""

import asyncio
import subprocess
import sys
import uuid
from pathlib import Path

import httpx

from tests.conftest import temporal_address
from tests.helpers import create_agent, create_task, start, transitions, wait_for_status
from tests.stack import BackgroundStack

EXAMPLES = Path(__file__).parent.parent / "examples"


async def _run(api, name, input_):
    agent = await create_agent(api)
    task = await create_task(api, agent["id"], (EXAMPLES / name).read_text())
    execution = await start(api, task["id"], input_)
    return task, execution


async def test_map_reduce_example(api):
    _, execution = await _run(api, "map_reduce.yaml", {"words": ["durable", "fast", "safe"]})
    done = await wait_for_status(api, execution["id"])
    assert done["status"] == "succeeded", done
    assert done["output"] == {"total": 21 + 4 + 8, "best": "durable"}


async def test_subworkflow_example(api):
    _, execution = await _run(api, "subworkflow.yaml", {"n": 3})
    done = await wait_for_status(api, execution["id"])
    assert done["output"] == {"result": "3 2 1 liftoff"}, done
    kinds = [t["type"] for t in await transitions(api, execution["id"])]
    # countdown's recursive yield is its last step: a tail yield replaces the frame (one init_branch each),
    # and only main's own yield, which is not in tail position, finishes with a finish_branch.
    assert kinds.count("init_branch") == 4 and kinds.count("finish_branch") == 1


async def test_approval_example_waits_then_approves(api):
    _, execution = await _run(api, "approval.yaml", {"amount": 120, "reason": "team lunch"})
    waiting = await wait_for_status(api, execution["id"], {"awaiting_input"})
    wait = [t for t in await transitions(api, execution["id"]) if t["type"] == "wait"][-1]
    assert "Expense of 120 for team lunch" in wait["output"]["info"]["question"]
    response = await api.put(
        f"/executions/{waiting['id']}", json={"status": "running", "input": {"approved": True}}
    )
    assert response.status_code == 200, response.text
    done = await wait_for_status(api, execution["id"])
    assert done["output"] == {"decision": "approved", "summary": "Expense of 120 for team lunch"}


async def test_approval_example_small_amount_needs_no_approval(api):
    _, execution = await _run(api, "approval.yaml", {"amount": 10, "reason": "coffee"})
    done = await wait_for_status(api, execution["id"])
    assert done["status"] == "succeeded" and done["output"]["decision"] == "approved"


async def test_daily_motivation_without_a_model_stops_clearly_at_its_first_prompt(api):
    task, execution = await _run(
        api, "daily_motivation.yaml", {"about_user": "a developer", "topics": ["focus"]}
    )
    assert task["tools"][0] == {"name": "send_email", "type": "function"}
    done = await wait_for_status(api, execution["id"])
    rows = await transitions(api, execution["id"])
    assert rows[1]["output"] == {"chosen_topic": "focus"}  # randint(len(topics)) picked the only topic
    assert done["status"] == "failed" and "set OPENAI_API_KEY" in done["error"]


async def test_pass_by_reference_example_runs_offline_from_its_recording(postgres_url, temporal_env, api_key):
    """As the docs run it: `MINT_MODEL_REPLAY=examples/recordings.jsonl mint up`, then `mint run`."""
    async with BackgroundStack(
        postgres_url,
        temporal_address(temporal_env),
        task_queue=f"by-reference-{uuid.uuid4()}",
        model_replay=str(EXAMPLES / "recordings.jsonl"),
    ) as stack:
        async with httpx.AsyncClient(
            base_url=stack.url, headers={"Authorization": f"Bearer {api_key}"}
        ) as api:
            _, execution = await _run(api, "pass_by_reference.yaml", {"lines": 200})
            await wait_for_status(api, execution["id"], {"awaiting_input"})
            wait = [t for t in await transitions(api, execution["id"]) if t["type"] == "wait"][-1]
            # The model wrote <<var:report>>; the client publishing the report gets all of it.
            call = wait["output"]["tool_call"]
            report = "\n".join(f"line {i}: all systems nominal" for i in range(200))
            assert call["name"] == "publish"
            assert call["arguments"] == {"report": report, "title": "Status: all systems nominal"}
            answer = await api.put(
                f"/executions/{execution['id']}",
                json={"status": "running", "input": {"url": "https://example.com/reports/1"}},
            )
            assert answer.status_code == 200, answer.text
            done = await wait_for_status(api, execution["id"])
    assert done["status"] == "succeeded", done["error"]
    assert done["output"].startswith("Published the status report")


async def test_restart_example_goes_on_from_the_step_that_failed(api):
    _, execution = await _run(api, "restart.yaml", {"total": 90, "people": 0})
    failed = await wait_for_status(api, execution["id"])
    assert failed["status"] == "failed", failed
    rows = await transitions(api, execution["id"])
    error = next(t for t in rows if t["type"] == "error")
    assert error["current"]["step"] == 1
    response = await api.post(
        f"/executions/{execution['id']}/restart",
        json={"from_transition": error["id"], "input": {"total": 90, "people": 3}},
    )
    assert response.status_code == 201, response.text
    done = await wait_for_status(api, response.json()["id"])
    assert done["status"] == "succeeded" and done["output"] == {"each": 30.0}, done
    assert done["restarted_from"] == execution["id"]
    kept = (await transitions(api, done["id"]))[1]  # main[0], as the original recorded it
    assert (kept["type"], kept["output"]) == ("step", rows[1]["output"])


async def test_metadata_example_reads_by_precedence(api):
    agent = await create_agent(api)
    await api.patch(f"/agents/{agent['id']}", json={"metadata": {"tone": "dry", "sign_off": "Cheers"}})
    task = await create_task(api, agent["id"], (EXAMPLES / "metadata.yaml").read_text())
    plain = await wait_for_status(api, (await start(api, task["id"]))["id"])
    assert plain["output"] == {"letter": "Regards, in a formal tone.", "tone": "formal"}, plain
    started = await api.post(
        f"/tasks/{task['id']}/executions", json={"input": {}, "metadata": {"tone": "cheerful"}}
    )
    overridden = await wait_for_status(api, started.json()["id"])
    assert overridden["output"] == {"letter": "Regards, in a cheerful tone.", "tone": "cheerful"}, overridden


async def test_errors_example_fails_naming_its_type(api):
    _, execution = await _run(api, "errors.yaml", {"count": 0})
    done = await wait_for_status(api, execution["id"])
    assert done["status"] == "failed" and done["error"].startswith("ExpressionError: "), done
    assert "division by zero" in done["error"]
    error = [t for t in await transitions(api, execution["id"]) if t["type"] == "error"][-1]
    assert error["metadata"]["error_type"] == "ExpressionError", error


async def test_adaptive_context_example_compresses_offline_from_its_recording(
    postgres_url, temporal_env, api_key, tmp_path
):
    """As the docs run it: `MINT_MODEL_REPLAY=examples/recordings.jsonl mint up`, then the script."""
    (tmp_path / ".mint").mkdir()
    (tmp_path / ".mint" / "api_key").write_text(api_key)
    async with BackgroundStack(
        postgres_url,
        temporal_address(temporal_env),
        task_queue=f"adaptive-{uuid.uuid4()}",
        model_replay=str(EXAMPLES / "recordings.jsonl"),
    ) as stack:
        script = [sys.executable, str(EXAMPLES / "adaptive_context.py"), stack.url]
        done = await asyncio.to_thread(subprocess.run, script, cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Key entities:" in done.stdout and "Summary of earlier messages:" in done.stdout, done.stdout
    assert "(replaces " in done.stdout


async def test_budget_example_runs_offline_from_its_recording(postgres_url, temporal_env, api_key):
    """As its header runs it, on `MINT_MODEL_REPLAY=examples/recordings.jsonl mint up`: two topics succeed, a
    third call is refused before it is made."""
    async with BackgroundStack(
        postgres_url,
        temporal_address(temporal_env),
        task_queue=f"budget-{uuid.uuid4()}",
        model_replay=str(EXAMPLES / "recordings.jsonl"),
    ) as stack:
        async with httpx.AsyncClient(
            base_url=stack.url, headers={"Authorization": f"Bearer {api_key}"}
        ) as api:
            _, two = await _run(api, "budget.yaml", {"topics": ["rivers", "mountains"]})
            done = await wait_for_status(api, two["id"])
            assert done["status"] == "succeeded", done["error"]
            assert len(done["output"]) == 2 and all(isinstance(s, str) and s for s in done["output"])
            _, three = await _run(api, "budget.yaml", {"topics": ["rivers", "mountains", "deserts"]})
            refused = await wait_for_status(api, three["id"])
    assert refused["status"] == "failed" and refused["error"].startswith("BudgetExceeded: "), refused
