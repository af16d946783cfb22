"""Which models there are and what they cost: the prices behind the cost on transitions and executions, and
the list GET /agents/models answers with."""

from __future__ import annotations

from contracts.messages import Usage
from infra.models.sdks import sdk
from infra.settings import ModelConfig

# USD per million (input, output) tokens, for the cost shown on transitions and executions. Models not
# listed have no cost recorded (their tokens are still counted).
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "o3-mini": (1.10, 4.40),
    "claude-haiku-4-5": (1.00, 5.00),
    "claude-sonnet-4-5": (3.00, 15.00),
    "claude-opus-4-5": (5.00, 25.00),
}

# Tokens a model's context window holds, as the providers document them (OpenAI's model pages; Anthropic's
# models overview, without the 1M-token beta). A session with no token_budget and a context_overflow policy
# keeps its context within this (services/chat/context.py); a model not listed has no budget.
CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-4o-mini": 128_000,
    "gpt-4o": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.1-mini": 1_047_576,
    "gpt-4.1-nano": 1_047_576,
    "o3-mini": 200_000,
    "claude-haiku-4-5": 200_000,
    "claude-sonnet-4-5": 200_000,
    "claude-opus-4-5": 200_000,
}


def _bare(model: str) -> str:
    """The model's name without the provider Mint may prefix it with (`openai/gpt-4o` is `gpt-4o`)."""
    return model.partition("/")[2] if model.startswith(("openai/", "anthropic/")) else model


def context_window(model: str | None) -> int | None:
    """The tokens the model's context window holds, or None for a model Mint does not know."""
    return CONTEXT_WINDOWS.get(_bare(model)) if model else None


def cost(model: str, usage: Usage) -> float | None:
    """The USD a call cost, or None for a model without a known price."""
    prices = PRICES.get(_bare(model))
    if prices is None:
        return None
    prompt, completion = usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0
    return round((prompt * prices[0] + completion * prices[1]) / 1_000_000, 8)


async def available_models(config: ModelConfig) -> list[str]:
    """Model ids a task can use here: what each configured OpenAI-compatible server lists (asked briefly),
    and the known Anthropic models when a key is set."""
    found: list[str] = []
    providers = config.configured()
    for provider in providers:
        if provider == "anthropic":
            found += [m for m in PRICES if m.startswith("claude")]
            continue
        base_url = config.openai_base_url if provider == "openai" else config.endpoints[provider]
        key = (
            config.openai_api_key if provider == "openai" else config.endpoint_keys.get(provider) or "unused"
        )
        openai = sdk("openai")
        client = openai.AsyncOpenAI(api_key=key, base_url=base_url, max_retries=0, timeout=3.0)
        try:
            ids = [m.id async for m in client.models.list()]
        except openai.OpenAIError:
            ids = [m for m in PRICES if not m.startswith("claude")] if provider == "openai" else []
        finally:
            await client.close()
        found += ids if provider == "openai" else [f"{provider}/{i}" for i in ids]
    return sorted(set(found))
