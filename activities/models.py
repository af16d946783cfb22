"""The model client layer: one activity calls any configured model through the official SDKs.

Requests and responses are provider-neutral: messages, tools and the answer use the OpenAI chat format, and
Anthropic's Messages API is translated to and from it here, so the interpreter never sees a provider. SDK
retries are off: Temporal retries the activity (on rate limits, 5xx and timeouts only), so every attempt
shows in the history. API keys come from the worker's environment and never enter a request, a transition
or an error message.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import anthropic
import jsonschema
import openai
from temporalio import activity

from activities import errors
from activities.heartbeat import heartbeating
from activities.recordings import Recordings
from contracts.calls import ModelAnswer, ModelRequest
from contracts.temporal import CALL_MODEL
from contracts.wire import plain
from mint.secrets import SecretStore, SecretsUnavailable
from mint.settings import ModelConfig, Settings
from workflows.prompts import strip_fence

# Where a streamed answer's text goes, piece by piece (session chat with `stream: true`).
OnText = Callable[[str], Awaitable[None]]
# SDK clients kept at once (one per provider, plus one per developer key in use).
MAX_CLIENTS = 64
ANTHROPIC_MAX_TOKENS = 4096  # Anthropic requires max_tokens; this is the default when a task sets none
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
# Settings passed through to the providers as they are (the OpenAI names; translated for Anthropic).
SETTINGS = ("temperature", "max_tokens", "top_p", "stop", "seed", "frequency_penalty", "presence_penalty")


class ModelActivities:
    def __init__(
        self, config: ModelConfig, recordings: Recordings | None = None, secrets: SecretStore | None = None
    ):
        self.config = config
        self.recordings = recordings
        self.secrets = secrets
        self._clients: dict[tuple[str, str | None], Any] = {}

    @activity.defn(name=CALL_MODEL)
    async def call_model(self, request: ModelRequest) -> ModelAnswer:
        """One chat completion (OpenAI's chat completion shape), with its usage and cost. A JSON answer
        that does not match the requested schema is retried like a 5xx."""
        async with heartbeating():
            answer = await self.complete(plain(request))
            return ModelAnswer(**answer, attempt=activity.info().attempt)

    async def complete(self, request: dict[str, Any], on_text: OnText | None = None) -> dict[str, Any]:
        """The same, outside an activity (session chat calls the model from the API). With `on_text`, the
        model streams, and each piece of the answer's text goes to `on_text` as it arrives."""
        request = {**request, "model": request.get("model") or self.config.default_model}
        if self.recordings is not None and self.recordings.replaying:
            response = self.recordings.replay(request)
            text = response["choices"][0]["message"].get("content")
            if on_text and text:
                await on_text(text)
        else:
            response = await self._complete(request, on_text)
            if self.recordings is not None:
                self.recordings.record(request, response)
        _check_format(response, request.get("response_format"))
        usage = response.get("usage") or {}
        return {
            "response": response,
            "usage": usage,
            "cost": cost(response.get("model") or request["model"], usage),
        }

    async def _complete(self, request: dict[str, Any], on_text: OnText | None) -> dict[str, Any]:
        provider, model = self.config.route(request["model"])
        key = await self._owner_key(provider, request.get("owner"))
        try:
            if provider == "anthropic":
                return await self._anthropic(model, request, key, on_text)
            return await self._openai(provider, model, request, key, on_text)
        except (openai.APIStatusError, anthropic.APIStatusError) as exc:
            raise _status_error(provider, exc.status_code, self._redact(_error_message(exc), key)) from None
        except (openai.APIConnectionError, anthropic.APIConnectionError) as exc:
            raise errors.transient(
                f"{provider} could not be reached: {type(exc).__name__}", "ModelUnavailable"
            ) from None

    async def _owner_key(self, provider: str, owner: dict[str, Any] | None) -> str | None:
        """The provider's key from the owner's secrets (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`,
        `<ENDPOINT>_API_KEY`; an agent's own first), which wins over the operator's; None if there is none."""
        if self.secrets is None or not owner:
            return None
        name = f"{provider.upper().replace('-', '_')}_API_KEY"
        try:
            found = await self.secrets.reveal(owner["developer_id"], owner.get("agent_id"), {name})
        except SecretsUnavailable:
            return None
        return found.get(name)

    def _redact(self, text: str, owner_key: str | None = None) -> str:
        """Providers sometimes quote the key they were given; it never goes further than this worker."""
        config = self.config
        keys = (config.openai_api_key, config.anthropic_api_key, *config.endpoint_keys.values(), owner_key)
        for key in keys:
            if key and len(key) >= 8:
                text = text.replace(key, "[redacted]").replace(key[-8:], "[redacted]")
        return text

    def _client(self, provider: str, owner_key: str | None) -> Any:
        """SDK clients, made on first use (a missing key is an error only for a task that needs it)."""
        if (provider, owner_key) in self._clients:
            return self._clients[(provider, owner_key)]
        if len(self._clients) >= MAX_CLIENTS:  # owners' keys come and go; a plain reset bounds the cache
            self._clients.clear()
        config, timeout = self.config, self.config.request_timeout
        if provider == "anthropic":
            if not (owner_key or config.anthropic_api_key):
                raise errors.permanent(
                    "no Anthropic model is configured: set ANTHROPIC_API_KEY (or a secret of that name)",
                    "ModelNotConfigured",
                )
            client: Any = anthropic.AsyncAnthropic(
                api_key=owner_key or config.anthropic_api_key,
                base_url=config.anthropic_base_url,
                max_retries=0,
                timeout=timeout,
            )
        elif provider == "openai":
            if not (owner_key or config.openai_api_key):
                raise errors.permanent(
                    "no OpenAI model is configured: set OPENAI_API_KEY (or a secret of that name)",
                    "ModelNotConfigured",
                )
            client = openai.AsyncOpenAI(
                api_key=owner_key or config.openai_api_key,
                base_url=config.openai_base_url,
                max_retries=0,
                timeout=timeout,
            )
        else:
            client = openai.AsyncOpenAI(
                api_key=owner_key or config.endpoint_keys.get(provider) or "unused",
                base_url=config.endpoints[provider],
                max_retries=0,
                timeout=timeout,
            )
        self._clients[(provider, owner_key)] = client
        return client

    async def _openai(
        self, provider: str, model: str, request: dict[str, Any], key: str | None, on_text: OnText | None
    ) -> dict[str, Any]:
        arguments: dict[str, Any] = {"model": model, "messages": request["messages"]}
        arguments.update(
            {k: v for k, v in (request.get("settings") or {}).items() if k in SETTINGS and v is not None}
        )
        if request.get("tools"):
            arguments["tools"] = request["tools"]
            if request.get("tool_choice") is not None:
                arguments["tool_choice"] = request["tool_choice"]
        if request.get("response_format"):
            arguments["response_format"] = request["response_format"]
        client = self._client(provider, key)
        if on_text is None:
            completion = await client.chat.completions.create(**arguments)
            return completion.model_dump(mode="json", exclude_unset=True)
        stream = await client.chat.completions.create(
            **arguments, stream=True, stream_options={"include_usage": True}
        )
        return await _joined(stream, on_text)

    async def _anthropic(
        self, model: str, request: dict[str, Any], key: str | None, on_text: OnText | None
    ) -> dict[str, Any]:
        settings = request.get("settings") or {}
        system, messages = to_anthropic(request["messages"])
        response_format = request.get("response_format") or {}
        schema = (response_format.get("json_schema") or {}).get("schema")
        if response_format.get("type") == "json_object":  # Anthropic has no JSON mode: ask in words
            system = "\n\n".join(filter(None, [system, "Answer with only a JSON object."]))
        arguments: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "max_tokens": settings.get("max_tokens") or ANTHROPIC_MAX_TOKENS,
        }
        if schema:
            arguments["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
        if system:
            arguments["system"] = system
        # The SDK no longer names sampling settings; they go as given, for the models that take them.
        sampling = {
            name: settings[name] for name in ("temperature", "top_p") if settings.get(name) is not None
        }
        if sampling:
            arguments["extra_body"] = sampling
        if settings.get("stop"):
            stop = settings["stop"]
            arguments["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
        if request.get("tools"):
            arguments["tools"] = [
                {
                    "name": t["function"]["name"],
                    "description": t["function"].get("description") or "",
                    "input_schema": t["function"].get("parameters") or {"type": "object", "properties": {}},
                }
                for t in request["tools"]
            ]
            if request.get("tool_choice") is not None:
                arguments["tool_choice"] = _anthropic_tool_choice(request["tool_choice"])
        client = self._client("anthropic", key)
        if on_text is None:
            message = await client.messages.create(**arguments)
        else:
            async with client.messages.stream(**arguments) as stream:
                async for text in stream.text_stream:
                    await on_text(text)
                message = await stream.get_final_message()
        return from_anthropic(message.model_dump(mode="json"))


async def _joined(stream: Any, on_text: OnText) -> dict[str, Any]:
    """An OpenAI chat-completion stream as the one completion it adds up to, its text passed on meanwhile."""
    texts: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    head: dict[str, Any] = {"object": "chat.completion", "usage": {}}
    finish = None
    async for chunk in stream:
        data = chunk.model_dump(mode="json", exclude_unset=True)
        head.update({k: data[k] for k in ("id", "created", "model") if k in data})
        head["usage"] = data.get("usage") or head["usage"]
        for choice in data.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                texts.append(delta["content"])
                await on_text(delta["content"])
            for part in delta.get("tool_calls") or []:
                call = calls.setdefault(
                    part["index"], {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
                )
                call["id"] = part.get("id") or call["id"]
                function = part.get("function") or {}
                call["function"]["name"] += function.get("name") or ""
                call["function"]["arguments"] += function.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return {**head, "choices": [{"index": 0, "message": message, "finish_reason": finish}]}


def to_anthropic(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """OpenAI chat messages as Anthropic's (system text, messages): tool calls become tool_use blocks and
    tool results tool_result blocks in a user turn (consecutive results share one turn)."""
    system: list[str] = []
    converted: list[dict[str, Any]] = []
    for message in messages:
        role, content = message["role"], message.get("content")
        if role in ("system", "developer"):
            system.append(_text(content))
        elif role == "tool":
            block = {"type": "tool_result", "tool_use_id": message["tool_call_id"], "content": _text(content)}
            if converted and converted[-1]["role"] == "user" and _is_tool_results(converted[-1]):
                converted[-1]["content"].append(block)
            else:
                converted.append({"role": "user", "content": [block]})
        elif role == "assistant" and message.get("tool_calls"):
            blocks: list[dict[str, Any]] = [{"type": "text", "text": _text(content)}] if content else []
            for call in message["tool_calls"]:
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call["id"],
                        "name": call["function"]["name"],
                        "input": json.loads(call["function"].get("arguments") or "{}"),
                    }
                )
            converted.append({"role": "assistant", "content": blocks})
        else:
            converted.append(
                {"role": "assistant" if role == "assistant" else "user", "content": _text(content)}
            )
    return "\n\n".join(s for s in system if s), converted


def from_anthropic(message: dict[str, Any]) -> dict[str, Any]:
    """An Anthropic message as an OpenAI chat completion."""
    text = "".join(b.get("text", "") for b in message.get("content", []) if b.get("type") == "text")
    tool_calls = [
        {
            "id": b["id"],
            "type": "function",
            "function": {"name": b["name"], "arguments": json.dumps(b.get("input") or {})},
        }
        for b in message.get("content", [])
        if b.get("type") == "tool_use"
    ]
    stop = message.get("stop_reason")
    finish = {"tool_use": "tool_calls", "max_tokens": "length"}.get(stop or "", "stop")
    usage = message.get("usage") or {}
    prompt, completion = usage.get("input_tokens") or 0, usage.get("output_tokens") or 0
    return {
        "id": message.get("id"),
        "object": "chat.completion",
        "model": message.get("model"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text or None, "tool_calls": tool_calls or None},
                "finish_reason": finish,
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def cost(model: str, usage: dict[str, Any]) -> float | None:
    prices = PRICES.get(model.partition("/")[2] if model.startswith(("openai/", "anthropic/")) else model)
    if prices is None:
        return None
    prompt, completion = usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0
    return round((prompt * prices[0] + completion * prices[1]) / 1_000_000, 8)


def _check_format(response: dict[str, Any], response_format: dict[str, Any] | None) -> None:
    """A JSON answer must parse, and match the schema when one was given; if not, the call is retried."""
    if not response_format or response_format.get("type") not in ("json_object", "json_schema"):
        return
    content = (response["choices"][0]["message"].get("content") or "").strip()
    try:
        value = json.loads(strip_fence(content))
    except ValueError:
        raise errors.transient(
            f"the model's answer is not JSON: {content[:200]!r}", "InvalidModelOutput"
        ) from None
    schema = (response_format.get("json_schema") or {}).get("schema")
    if schema:
        problem = next(iter(jsonschema.Draft202012Validator(schema).iter_errors(value)), None)
        if problem is not None:
            where = "/".join(str(p) for p in problem.absolute_path) or "the top level"
            raise errors.transient(
                f"the model's answer does not match the schema at {where}: {problem.message}",
                "InvalidModelOutput",
            )


def _anthropic_tool_choice(choice: Any) -> dict[str, Any]:
    if isinstance(choice, dict) and choice.get("function"):
        return {"type": "tool", "name": choice["function"]["name"]}
    return {"type": {"required": "any", "none": "none"}.get(str(choice), "auto")}


def _is_tool_results(message: dict[str, Any]) -> bool:
    content = message["content"]
    return isinstance(content, list) and all(b.get("type") == "tool_result" for b in content)


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts: keep the text ones
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return json.dumps(content)


def _error_message(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error") if isinstance(body.get("error"), dict) else body
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])[:500]
    return str(getattr(exc, "message", "") or type(exc).__name__)[:500]


def _status_error(provider: str, status: int, message: str) -> Exception:
    """Rate limits, timeouts and 5xx are retried; any other 4xx is the request's fault and is not."""
    text = f"{provider} answered {status}: {message}"
    if status in (408, 409, 429) or status >= 500:
        return errors.transient(text, "ModelUnavailable")
    return errors.permanent(text, "ModelRequestRefused")


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
        client = openai.AsyncOpenAI(api_key=key, base_url=base_url, max_retries=0, timeout=3.0)
        try:
            ids = [m.id async for m in client.models.list()]
        except openai.OpenAIError:
            ids = [m for m in PRICES if not m.startswith("claude")] if provider == "openai" else []
        finally:
            await client.close()
        found += ids if provider == "openai" else [f"{provider}/{i}" for i in ids]
    return sorted(set(found))


def model_client(settings: Settings, secrets: SecretStore | None = None) -> ModelActivities:
    """The model layer as the settings configure it (with recordings, when asked for); with `secrets`,
    developers' own provider keys are used for their calls."""
    recordings = None
    if settings.model_replay or settings.model_record:
        recordings = Recordings(
            settings.model_replay or settings.model_record or "", bool(settings.model_replay)
        )
    return ModelActivities(settings.model_config(), recordings, secrets)
