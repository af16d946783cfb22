"""Budgets: limits on an execution's or a session's model calls, tokens and cost.

Pure data shared by the task language, the API schemas, the model call activity and chat. A limit is checked
before each model call, against what the calls before it recorded:
- `max_model_calls` N: call N+1 is refused (exact, also with calls running at once: each call reserves its
  place atomically before it starts);
- `max_tokens` / `max_cost_usd`: a call is refused once the recorded total has reached the limit. A call's
  tokens are known only after it answers, so the call that crosses the limit completes and is counted, and
  calls already running when it crosses complete too; the next call is the one refused.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from contracts.json import JsonObject, JsonValue


class Budget(BaseModel):
    """`budget: {max_tokens, max_cost_usd, max_model_calls}`; a limit left out (or null) is no limit."""

    model_config = ConfigDict(extra="forbid")
    # Bounded far past any real spend, so that a limit is a number every store and comparison holds exactly.
    max_tokens: int | None = Field(default=None, ge=0, le=10**15)
    max_cost_usd: float | None = Field(default=None, ge=0, le=10**9)
    max_model_calls: int | None = Field(default=None, ge=0, le=10**9)

    def limits(self) -> JsonObject | None:
        """The limits set, as stored; None when there are none."""
        set_ = self.model_dump(exclude_none=True)
        return set_ or None


def over_budget(budget: JsonObject | None, calls: int, tokens: int, cost: float) -> str | None:
    """Why one more model call is refused after `calls` calls that used `tokens` and cost `cost`; None when
    it is allowed."""
    if not budget:
        return None
    max_calls, max_tokens, max_cost = (
        _number(budget.get("max_model_calls")),
        _number(budget.get("max_tokens")),
        _number(budget.get("max_cost_usd")),
    )
    if max_calls is not None and calls >= max_calls:
        return f"{calls} model calls were made and the budget allows {max_calls} (max_model_calls)"
    if max_tokens is not None and tokens >= max_tokens:
        return f"{tokens} tokens were used and the budget allows {max_tokens} (max_tokens)"
    if max_cost is not None and cost >= max_cost:
        return f"${cost:.6f} was spent and the budget allows ${max_cost} (max_cost_usd)"
    return None


def _number(limit: JsonValue) -> int | float | None:
    """A limit as stored (Budget checked it): a number, or none."""
    return limit if isinstance(limit, int | float) and not isinstance(limit, bool) else None
