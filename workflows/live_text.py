"""Whether a prompt step's answer streams live (`stream: true` in its settings, Julep's chat-settings field),
and under which name: its label, else its place (`main[0]`). The call_model activity does the streaming
(activities/models.py); the workflow only names the step on the request, so a step that streams schedules
the same commands as one that does not.

Output guardrails hold the text back, as in a chat (services/chat/guardrails.py): when the task, its agent or
an agent a step may be handed to has output guardrails, nothing streams live and the answer is seen in the
step's transition only.
"""

from __future__ import annotations

from contracts.json import JsonObject
from workflows.agents import Agent
from workflows.guardrails import in_order
from workflows.step_runner import StepRunner


def stream_name(settings: JsonObject, label: str | None, here: str, runner: StepRunner) -> str | None:
    """The name the step's live text goes out under, or None when it does not stream (or is held back). The
    agents a step may be handed to are those the execution read at its start (ExecutionParams)."""
    if settings.get("stream") is not True:
        return None
    handed = [Agent.of(raw) for raw in runner.params.handoff_agents.values()]
    owners = [runner.task.guardrails, runner.agent.guardrails, *(a.guardrails for a in handed)]
    if in_order(*owners, stage="output"):
        return None
    return label or here
