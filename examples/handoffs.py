"""Handoffs: a triage agent hands billing questions to a billing agent, in a task and in a chat.

Run against a Mint with a model (`OPENAI_API_KEY=... mint up`), from the repository:
    MINT_API_URL=http://127.0.0.1:8080 MINT_API_KEY=... python examples/handoffs.py
It prints who answered each time, and the handoff the execution recorded.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import httpx

TASK = {
    "name": "help desk",
    "main": [
        {
            "prompt": [
                {"role": "system", "content": "You are the front desk. Hand billing questions to billing."},
                {"role": "user", "content": "$ inputs[0]['question']"},
            ],
            "auto_run_tools": True,  # the loop that may call transfer_to_billing
            "unwrap": True,
        }
    ],
}


async def _created(request: Any) -> dict[str, Any]:
    """The JSON of a request's answer (awaited here), which must be a success."""
    response = await request
    response.raise_for_status()
    return response.json()


async def main(api: httpx.AsyncClient, question: str = "Was my last invoice paid?") -> dict[str, Any]:
    """Create the two agents, run the task and one chat; return what each answered and who answered it."""
    billing = await _created(
        api.post(
            "/agents",
            json={
                "name": "billing",
                "about": "answers questions about invoices and payments",
                "instructions": ["Answer as the billing desk", "Say which invoice you mean"],
            },
        )
    )
    triage = await _created(
        api.post(
            "/agents",
            json={
                "name": "triage",
                "instructions": ["Hand questions about invoices to billing"],
                "handoffs": [billing["id"]],
            },
        )
    )
    task = await _created(api.post(f"/agents/{triage['id']}/tasks", json=TASK))
    execution = await _created(
        api.post(f"/tasks/{task['id']}/executions", json={"input": {"question": question}})
    )
    while execution["status"] not in ("succeeded", "failed", "cancelled"):
        await asyncio.sleep(0.2)
        execution = (await api.get(f"/executions/{execution['id']}")).json()
    rows = (await api.get(f"/executions/{execution['id']}/transitions", params={"direction": "asc"})).json()[
        "items"
    ]
    handoffs = [r["metadata"]["handoff"] for r in rows if "handoff" in r["metadata"]]

    session = await _created(api.post("/sessions", json={"agent": triage["id"]}))
    chat = await _created(
        api.post(
            f"/sessions/{session['id']}/chat", json={"messages": [{"role": "user", "content": question}]}
        )
    )
    return {
        "task": {"status": execution["status"], "output": execution.get("output"), "handoffs": handoffs},
        "chat": {"answer": chat["choices"][0]["message"]["content"], "agent_id": chat["agent_id"]},
        "agents": {"triage": triage["id"], "billing": billing["id"]},
    }


async def _run() -> None:
    url = os.environ.get("MINT_API_URL", "http://127.0.0.1:8080")
    headers = {"Authorization": f"Bearer {os.environ['MINT_API_KEY']}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as api:
        result = await main(api)
    names = {v: k for k, v in result["agents"].items()}
    print(f"task ({result['task']['status']}): {result['task']['output']}")
    for handoff in result["task"]["handoffs"]:
        print(f"  handed from {handoff['from_name']} to {handoff['to_name']}")
    print(f"chat, answered by {names.get(result['chat']['agent_id'])}: {result['chat']['answer']}")


if __name__ == "__main__":
    asyncio.run(_run())
