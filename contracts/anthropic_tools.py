"""Anthropic's built-in tools, as Julep passes them to the model (`type: computer_20241022` and the like): each
type, and the name Anthropic's models call it by. Shared by the task language (workflows/language/tools.py),
which takes them as tools a client runs, and the model layer (infra/models/anthropic_format.py), which offers
them to Claude models."""

from __future__ import annotations

ANTHROPIC_TOOLS = {
    "computer_20241022": "computer",
    "text_editor_20241022": "str_replace_editor",
    "bash_20241022": "bash",
}
# What Anthropic's API asks to be told to take them.
ANTHROPIC_TOOLS_BETA = "computer-use-2024-10-22"
