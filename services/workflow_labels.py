"""What the Temporal UI shows of an execution's workflow from the moment it starts: a one-line summary (the
task and the agent), fixed details (the ids, and how to reach the execution from Mint) and Mint's search
attributes. All of it travels in the start request itself, so it costs no extra round trip."""

from __future__ import annotations

from dataclasses import dataclass

from temporalio.common import SearchAttributePair, TypedSearchAttributes

from contracts.records.agents import Agent
from contracts.records.tasks import TaskVersion
from contracts.temporal import MINT_AGENT, MINT_DEVELOPER, MINT_STATUS, MINT_TASK

# Keyword values are indexed whole, and SQL visibility keeps at most 255 characters of one (task names are
# at most 255 characters already: this only bounds what a very long agent name adds).
MAX_KEYWORD_CHARS = 255
# The summary is one line in the UI's list and header.
MAX_SUMMARY_CHARS = 200


@dataclass(frozen=True)
class WorkflowLabels:
    summary: str
    details: str
    search_attributes: TypedSearchAttributes | None  # None when the namespace does not have them registered


def workflow_labels(
    task: TaskVersion, agent: Agent | None, developer: str, execution_id: str, search_attributes: bool
) -> WorkflowLabels:
    """The labels of execution `execution_id` of `task` (a stored task version), run by `agent` (None: an
    agent no longer there)."""
    task_name = str(task.document.get("name") or task.id)
    agent_id = None if agent is None else agent.id
    agent_name = (agent.name or agent.id) if agent is not None else "?"
    summary = _one_line(f"{task_name} · agent {agent_name}", MAX_SUMMARY_CHARS)
    details = "\n".join(
        [
            f"**Mint execution** `{execution_id}` (this workflow's id is the execution's id)",
            f"**Task** {task_name} · `{task.id}` version {task.version}",
            f"**Agent** {agent_name} · `{agent_id}`",
            f"**Developer** `{developer}`",
            "",
            f"From Mint: `mint status {execution_id}`, or `GET /executions/{execution_id}` on the API.",
        ]
    )
    attributes = None
    if search_attributes:
        values = [(MINT_TASK, task_name), (MINT_AGENT, agent_name), (MINT_DEVELOPER, developer)]
        # The workflow keeps MintStatus current from here on (workflows/visibility.py).
        values.append((MINT_STATUS, "running"))
        attributes = TypedSearchAttributes(
            [SearchAttributePair(key, value[:MAX_KEYWORD_CHARS]) for key, value in values]
        )
    return WorkflowLabels(summary, details, attributes)


def _one_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
