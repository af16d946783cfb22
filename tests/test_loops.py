"""Julep's loop idioms at scale, on the real stack: a yield at the end of an if/switch
branch is a tail call, deep non-tail recursion fails with the depth guard's message, and Julep's
`results + [_]` reduce runs over 10,000 items."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import Any

import httpx

from tests.conftest import temporal_address
from tests.helpers import create_agent, create_task, start, wait_for_status
from tests.stack import BackgroundStack
from tests.test_long_runs import all_transitions

ROUNDS = 5_000

# `if: $ _.i < N`, `then: {workflow: main, ...}`, `else: {return: ...}`: Julep's loop.
IF_LOOP = {
    "name": "if loop",
    "main": [
        {
            "if": "$ _.i < _.n",
            "then": {"workflow": "main", "arguments": {"i": "$ _.i + 1", "n": "$ _.n"}},
            "else": {"return": "$ _"},
        }
    ],
}

# The same through a switch, with a step before the yield, a hop through another workflow, and the
# switch nested in an if (a branch's last step in tail position is itself in tail position).
SWITCH_LOOP = {
    "name": "switch loop",
    "main": [
        {"evaluate": {"i": "$ _.i", "n": "$ _.n"}},
        {
            "if": "$ True",
            "then": {
                "switch": [
                    {"case": "$ _.i >= _.n", "then": {"return": {"rounds": "$ _.i"}}},
                    {
                        "case": "_",
                        "then": [{"evaluate": {"i": "$ _.i + 1", "n": "$ _.n"}}, {"workflow": "hop"}],
                    },
                ]
            },
        },
    ],
    "hop": [{"workflow": "main"}],
}


# Julep's loop with a day's sleep in the branch: each round adds a timer to the history.
DAILY_BRANCH_LOOP = {
    "name": "daily branch loop",
    "main": [
        {"evaluate": {"day": "$ _.day + 1"}},
        {
            "if": "$ _.day < 100000",
            "then": [{"sleep": {"days": 1}}, {"workflow": "main"}],
            "else": {"return": "$ _"},
        },
    ],
}


def recursion(call_then: list[dict[str, Any]]) -> dict[str, Any]:
    """`down` calls itself `n` deep and then counts back up: the yield is not in tail position."""
    return {
        "name": "recursion",
        "main": [{"workflow": "down"}],
        "down": [
            {"if": "$ _.n > 0", "then": call_then, "else": {"evaluate": {"depth": "$ 0"}}},
        ],
    }


NON_TAIL = recursion(
    [{"workflow": "down", "arguments": {"n": "$ _.n - 1"}}, {"evaluate": {"depth": "$ _.depth + 1"}}]
)


async def run(api, spec: dict[str, Any], input_: Any, timeout: float = 60) -> dict[str, Any]:
    task = await create_task(api, (await create_agent(api))["id"], spec)
    execution = await start(api, task["id"], input_)
    return await wait_for_status(api, execution["id"], timeout=timeout)


async def test_a_yield_at_the_end_of_an_if_branch_loops_5000_times(api):
    done = await run(api, IF_LOOP, {"i": 0, "n": ROUNDS}, timeout=300)
    assert done["status"] == "succeeded", done
    assert done["output"] == {"i": ROUNDS, "n": ROUNDS}
    rows = await all_transitions(api, done["id"])
    kinds = [r["type"] for r in rows]
    assert kinds.count("init_branch") == ROUNDS and "finish_branch" not in kinds
    assert len(rows) == done["transition_count"] and kinds[-1] == "finish"


async def test_a_yield_at_the_end_of_a_switch_branch_loops_5000_times(api):
    done = await run(api, SWITCH_LOOP, {"i": 0, "n": ROUNDS}, timeout=300)
    assert done["status"] == "succeeded", done
    assert done["output"] == {"rounds": ROUNDS}
    rows = await all_transitions(api, done["id"])
    assert sum(r["type"] == "init_branch" for r in rows) == 2 * ROUNDS
    assert not any(r["type"] == "finish_branch" for r in rows)


async def test_a_branch_loop_continues_as_new_without_a_seam(postgres_url, time_skipping_env, api_key):
    stack = BackgroundStack(
        postgres_url,
        temporal_address(time_skipping_env),
        task_queue=f"branch-loop-{uuid.uuid4()}",
        max_history_events=150,
    )
    await asyncio.to_thread(stack.start)
    try:
        async with httpx.AsyncClient(
            base_url=stack.url, headers={"Authorization": f"Bearer {api_key}"}
        ) as api:
            task = await create_task(api, (await create_agent(api))["id"], DAILY_BRANCH_LOOP)
            execution = await start(api, task["id"], {"day": 0})
            await wait_for_status(api, execution["id"], {"running"})
            await time_skipping_env.sleep(timedelta(days=300))
            await asyncio.sleep(1)
            rows = await all_transitions(api, execution["id"])
            assert (await api.get(f"/executions/{execution['id']}")).json()["status"] == "running"
            days = [
                r["output"]["day"]
                for r in rows
                if r["type"] == "step" and r["current"]["step"] == 0 and r["current"]["workflow"] == "main"
            ]
            assert len(days) >= 200 and days == list(range(1, len(days) + 1)), days[:5]
            assert [r["type"] for r in rows].count("init") == 1
            assert len(rows) == len({r["id"] for r in rows})
            latest = await time_skipping_env.client.get_workflow_handle(execution["id"]).describe()
            assert latest.history_length < 300, latest.history_length
    finally:
        await asyncio.to_thread(stack.stop)


async def test_a_non_tail_recursion_runs_to_the_depth_limit(api):
    # 190 levels through an if branch used to stop near 120 with "expression nests too deeply".
    done = await run(api, NON_TAIL, {"n": 190})
    assert done["status"] == "succeeded", done
    assert done["output"] == {"depth": 190}


async def test_a_non_tail_recursion_past_the_limit_fails_with_the_depth_guard(api):
    done = await run(api, NON_TAIL, {"n": 1_000})
    assert done["status"] == "failed", done
    assert "workflow 'down' would nest more than 200 yields deep" in done["error"], done["error"]
    assert "expression" not in done["error"]


async def test_the_depth_of_recursion_is_counted_per_branch_not_across_them(api):
    # 100 items run side by side, each three yields deep: 300 yields at once, none deeper than 3.
    spec = {
        "name": "side by side",
        "main": [{"over": "$ list(range(100))", "map": {"workflow": "one"}, "parallelism": 100}],
        "one": [{"workflow": "two"}, {"evaluate": {"v": "$ _"}}],
        "two": [{"workflow": "three"}, {"evaluate": {"w": "$ _"}}],
        "three": [{"sleep": {"seconds": 0.2}}, {"evaluate": {"x": "$ _"}}],
    }
    done = await run(api, spec, {})
    assert done["status"] == "succeeded", done
    assert done["output"] == [{"v": {"w": {"x": i}}} for i in range(100)]


def wide(reduce: dict[str, Any], count: int = 10_000) -> dict[str, Any]:
    return {
        "name": "wide reduce",
        "main": [
            {"over": f"$ list(range({count}))", "map": {"evaluate": {"sq": "$ _ * _"}}, **reduce},
            {"evaluate": {"count": "$ len(_)", "head": "$ _[:2]", "last": "$ _[-1]"}},
        ],
    }


async def test_julep_default_reduce_over_10000_items(api):
    done = await run(api, wide({"reduce": "$ results + [_]"}), {})
    assert done["status"] == "succeeded", done
    assert done["output"] == {"count": 10_000, "head": [{"sq": 0}, {"sq": 1}], "last": {"sq": 99_980_001}}


async def test_an_omitted_reduce_starts_from_initial_as_julep_does(api):
    done = await run(api, wide({"initial": ["start"]}), {})
    assert done["status"] == "succeeded", done
    assert done["output"] == {"count": 10_001, "head": ["start", {"sq": 0}], "last": {"sq": 99_980_001}}


async def test_an_appending_reduce_of_a_part_over_10000_items(api):
    done = await run(api, wide({"reduce": "$ results + [_.sq % 7]", "initial": [-1]}), {})
    assert done["status"] == "succeeded", done
    assert done["output"] == {"count": 10_001, "head": [-1, 0], "last": 99_980_001 % 7}


async def test_the_seed_spelling_of_the_default_reduce_over_10000_items(api):
    spec = {
        "name": "seed reduce",
        "main": [
            {"over": "list(range(10000))", "map": {"evaluate": {"sq": "_ * _"}}, "reduce": "results + [_]"},
            {"evaluate": {"count": "len(_)", "last": "_[-1]"}},
        ],
    }
    done = await run(api, spec, {})
    assert done["status"] == "succeeded", done
    assert done["output"] == {"count": 10_000, "last": {"sq": 99_980_001}}
