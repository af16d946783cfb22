"""The default system prompt of a chat (services/chat/context.py), rendered without a stack."""

from __future__ import annotations

from services.chat.context import render_system


def test_each_document_ends_with_its_separator_on_a_line_of_its_own():
    docs = [
        {"title": "Apples", "content": "Keep apples cool and dried."},
        {"title": "Pears", "content": ["Pears ripen off the tree.", "Eat them soft."]},
    ]
    agent = {"name": "Mint", "about": None, "instructions": None}
    scope = {"agent": agent, "user": None, "situation": None, "summary": None, "tools": [], "docs": docs}
    prompt = render_system(None, scope)
    assert "dried.\n---\nPears\n" in prompt, prompt
    assert prompt.endswith("Eat them soft.\n---"), prompt
