"""A session's context: the system message from its template, the history, and the token budget.

Tokens are counted as infra/models/tokens.py does (cl100k_base, offline).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from contracts.json import JsonObject
from contracts.messages import Message
from contracts.records.sessions import HistoryEntry
from expressions.budget import Budget
from expressions.parsing import ExpressionError
from expressions.templates import render_template
from infra.models.catalog import context_window
from infra.models.tokens import count_tokens
from services.chat.session import ChatSession

# The seed's default system template, with its slips fixed: "About you" shows the agent's `about` (the seed
# repeats its name), no double space before "and their name", and tools of every type are listed (the seed
# fails on any but `function`), and each document's `---` ends its line. The session's `situation` and `summary`
# have their own paragraphs.
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
    {{"---\\n"}}
  {%- endfor -%}
{%- endif -%}"""


class ContextTooLarge(Exception):
    """The context does not fit the token budget and the session's policy cannot make it fit."""


class NeedsCompression(ContextTooLarge):
    """An `adaptive` session's context is over its budget: compress the history first (never drop from it)."""

    def __init__(self, tokens: int, budget: int, fixed: int):
        self.tokens, self.budget, self.fixed = tokens, budget, fixed  # fixed: system and new messages
        super().__init__(f"the context is {tokens} tokens, over the session's token_budget of {budget}")


def render_system(template: str | None, scope: Mapping[str, object]) -> str:
    """The system message: the session's template (or the default) over agent, user(s), situation, tools,
    docs and summary, in the hardened Jinja sandbox."""
    try:
        return str(render_template(template or DEFAULT_SYSTEM_TEMPLATE, scope, Budget())).strip()
    except ExpressionError as exc:
        raise ValueError(f"the session's system template failed: {exc}") from None


def metadata_layers(*layers: JsonObject | None) -> JsonObject:
    """Metadata merged by precedence, the later layer winning (sessions: agent, then user, then session)."""
    merged: JsonObject = {}
    for layer in layers:
        merged.update(layer or {})
    return merged


def token_budget(session: ChatSession, model: str | None) -> int | None:
    """The budget a context keeps within: the session's `token_budget`, or, when it has none and a
    `context_overflow` policy, the model's context window (None for a model not in the catalog)."""
    if session.token_budget or session.context_overflow not in ("truncate", "adaptive"):
        return session.token_budget
    return context_window(model)


@dataclass(frozen=True)
class Entry:
    """A history message and its tokens (as the history counted them when it was written)."""

    message: Message
    tokens: int

    @classmethod
    def of(cls, entry: HistoryEntry) -> Entry:
        """A message of the session's history (infra/store/session_history.py)."""
        return cls(entry.message, entry.token_count or count_tokens(entry.message))


def provider_valid(history: list[Entry]) -> list[Entry]:
    """The history as a provider takes it after messages were left out: its first message that is not a
    system message is a user message (leading assistant and tool messages go), and no tool message is left
    without the assistant message whose tool_calls it answers."""
    roles = [e.message["role"] for e in history]
    first_user = roles.index("user") if "user" in roles else len(history)
    kept = [e for e in history[:first_user] if e.message["role"] == "system"] + history[first_user:]
    called: set[str] = set()
    valid = []
    for entry in kept:
        message = entry.message
        if message["role"] == "tool" and message.get("tool_call_id") not in called:
            continue
        called.update(c.get("id") for c in message.get("tool_calls") or [])
        valid.append(entry)
    return valid


@dataclass
class Context:
    messages: list[Message]
    tokens: int
    wanted: int  # the tokens of everything, before any was left out
    dropped: int = 0  # history messages left out to fit the budget
    budget: int | None = None  # the budget it was fitted to
    system_tokens: int = 0  # the system message's share of `tokens`


def fit(
    system: Message | None, history: list[Entry], new: list[Message], budget: int | None, overflow: str | None
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
    total = fixed + sum(e.tokens for e in history)
    if budget is None or total <= budget:
        return Context(head + _messages(history) + new, total, total, 0, budget, system_tokens)
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
    while total > budget or (dropped < len(history) and history[dropped].message["role"] != "user"):
        total -= history[dropped].tokens
        dropped += 1
    kept = provider_valid(history[dropped:])
    total = fixed + sum(e.tokens for e in kept)
    return Context(
        head + _messages(kept) + new, total, wanted, len(history) - len(kept), budget, system_tokens
    )


def _messages(history: list[Entry]) -> list[Message]:
    return [e.message for e in history]
