"""A session's context: the system message from its template, the history, and the token budget.

Tokens are counted as infra/models/tokens.py does (cl100k_base, offline).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from expressions.budget import Budget
from expressions.parsing import ExpressionError
from expressions.templates import render_template
from infra.models.catalog import context_window
from infra.models.tokens import count_tokens

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


class ContextTooLarge(Exception):
    """The context does not fit the token budget and the session's policy cannot make it fit."""


class NeedsCompression(ContextTooLarge):
    """An `adaptive` session's context is over its budget: compress the history first (never drop from it)."""

    def __init__(self, tokens: int, budget: int, fixed: int):
        self.tokens, self.budget, self.fixed = tokens, budget, fixed  # fixed: system and new messages
        super().__init__(f"the context is {tokens} tokens, over the session's token_budget of {budget}")


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


def token_budget(session: dict[str, Any], model: str | None) -> int | None:
    """The budget a context keeps within: the session's `token_budget`, or, when it has none and a
    `context_overflow` policy, the model's context window (None for a model not in the catalog)."""
    if session.get("token_budget") or session.get("context_overflow") not in ("truncate", "adaptive"):
        return session.get("token_budget")
    return context_window(model)


def provider_valid(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The history as a provider takes it after messages were left out: its first message that is not a
    system message is a user message (leading assistant and tool messages go), and no tool message is left
    without the assistant message whose tool_calls it answers."""
    first_user = next((i for i, m in enumerate(history) if m["role"] == "user"), len(history))
    kept = [m for m in history[:first_user] if m["role"] == "system"] + history[first_user:]
    called: set[str] = set()
    valid = []
    for message in kept:
        if message["role"] == "tool" and message.get("tool_call_id") not in called:
            continue
        called.update(c.get("id") for c in message.get("tool_calls") or [])
        valid.append(message)
    return valid


@dataclass
class Context:
    messages: list[dict[str, Any]]
    tokens: int
    wanted: int  # the tokens of everything, before any was left out
    dropped: int = 0  # history messages left out to fit the budget
    budget: int | None = None  # the budget it was fitted to
    system_tokens: int = 0  # the system message's share of `tokens`


def fit(
    system: dict[str, Any] | None,
    history: list[dict[str, Any]],
    new: list[dict[str, Any]],
    budget: int | None,
    overflow: str | None,
) -> Context:
    """The messages to send: system, history, then the new ones, within `budget` tokens.

    Over budget: `truncate` drops the oldest history, never the system message or the new messages, and then
    any assistant or tool message the history would open with; `adaptive` never drops (NeedsCompression: the
    caller compresses the history and fits again); with no policy, or if the system message and the new
    messages alone do not fit, it is an error the caller answers with a 4xx."""
    head = [system] if system else []
    system_tokens = count_tokens(system) if system else 0
    fixed = system_tokens + sum(count_tokens(m) for m in new)
    if overflow in ("truncate", "adaptive"):
        history = provider_valid(history)
    total = fixed + sum(_tokens(m) for m in history)
    if budget is None or total <= budget:
        return Context(head + _clean(history) + new, total, total, 0, budget, system_tokens)
    if overflow not in ("truncate", "adaptive"):
        raise ContextTooLarge(
            f"the context is {total} tokens, over the session's token_budget of {budget}; set context_overflow "
            "to 'truncate' or 'adaptive', raise the budget, or clear the history"
        )
    if fixed > budget:
        raise ContextTooLarge(
            f"the system message and the new messages alone are {fixed} tokens, over the token_budget of {budget}"
        )
    if overflow == "adaptive":
        raise NeedsCompression(total, budget, fixed)
    wanted, dropped = total, 0
    while total > budget or (dropped < len(history) and history[dropped]["role"] != "user"):
        total -= _tokens(history[dropped])
        dropped += 1
    kept = provider_valid(history[dropped:])
    total = fixed + sum(_tokens(m) for m in kept)
    return Context(head + _clean(kept) + new, total, wanted, len(history) - len(kept), budget, system_tokens)


def _tokens(message: dict[str, Any]) -> int:
    return int(message.get("_tokens") or count_tokens(message))


def _clean(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """History messages without what only Mint reads (keys starting with `_`)."""
    return [{k: v for k, v in m.items() if not k.startswith("_")} for m in history]
