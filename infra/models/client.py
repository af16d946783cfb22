"""The model client: calls any configured model through the official SDKs.

Requests and responses are provider-neutral: messages, tools and the answer use the OpenAI chat format, and
Anthropic's Messages API is translated to and from it (infra/models/anthropic_format.py), so the interpreter
never sees a provider. SDK retries are off: Temporal retries the call_model activity (on rate limits, 5xx
and timeouts only: the errors raised here say which), so every attempt shows in the history. API keys come
from the process's environment or the owner's secrets and never enter a request, a transition or an error
message.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterable, AsyncIterator, Awaitable
from typing import TYPE_CHECKING, Required, TypedDict

import jsonschema

from contracts.anthropic_tools import ANTHROPIC_TOOLS
from contracts.calls import ModelAnswer, ModelRequest, Owner
from contracts.json import JsonObject
from contracts.messages import Completion, Message, Usage
from infra.models.anthropic_format import anthropic_arguments, from_anthropic, named_back, tool_name
from infra.models.anthropic_stream import joined_message
from infra.models.catalog import cost
from infra.models.completion import is_completion
from infra.models.openai_stream import OnText, joined
from infra.models.recordings import Recordings
from infra.models.sdks import imported, sdk
from infra.settings import ModelConfig, Settings
from infra.store.secrets import SecretStore, SecretsUnavailable
from infra.temporal import errors

if TYPE_CHECKING:  # the SDKs are imported where a call needs them (infra/models/sdks.py)
    import anthropic
    import openai

# SDK clients kept at once (one per provider, plus one per developer key in use).
MAX_CLIENTS = 64
# Settings passed through to the providers as they are (the OpenAI names; translated for Anthropic).
SETTINGS = (
    "temperature",
    "max_tokens",
    "top_p",
    "stop",
    "seed",
    "frequency_penalty",
    "presence_penalty",
    "logit_bias",
)
# Julep's settings that only OpenAI-compatible servers take (vLLM and the like: a named endpoint), in the
# request's body; OpenAI's own API refuses them, and Anthropic takes none of these nor logit_bias.
EXTRA_SETTINGS = ("min_p", "repetition_penalty", "length_penalty")


class ModelClient:
    """Calls any configured model; the worker's call_model activity (activities/models.py) and the API's
    session chat share it."""

    def __init__(
        self, config: ModelConfig, recordings: Recordings | None = None, secrets: SecretStore | None = None
    ):
        self.config = config
        self.recordings = recordings
        self.secrets = secrets
        self._openai_clients: dict[tuple[str, str | None], openai.AsyncOpenAI] = {}
        self._anthropic_clients: dict[str | None, anthropic.AsyncAnthropic] = {}

    async def complete(
        self, request: ModelRequest, on_text: OnText | None = None, key_ahead: KeyAhead | None = None
    ) -> ModelAnswer:
        """One chat completion (OpenAI's chat completion shape), its usage and cost. `at` (the step) is where
        recordings file the call, and the owner's secrets may hold the provider's key. A JSON answer that
        does not match the requested schema fails like a 5xx (Temporal retries it). With `on_text`, the
        model streams, and each piece of the answer's text goes to `on_text` as it arrives. `key_ahead`: the
        owner's key, read ahead (read_key_ahead)."""
        request = dataclasses.replace(request, model=request.model or self.config.default_model)
        if self.recordings is not None and self.recordings.replaying:
            response = self.recordings.replay(request)
            text = response["choices"][0]["message"].get("content")
            if on_text and isinstance(text, str) and text:
                await on_text(text)
        else:
            response = await self._complete(request, on_text, key_ahead)
            if self.recordings is not None:
                self.recordings.record(request, response)
        _check_format(response, request.response_format)
        usage = response.get("usage") or Usage()
        return ModelAnswer(response, usage, cost(response.get("model") or request.model or "", usage))

    def unsupported(self, model: str | None, settings: JsonObject) -> list[str]:
        """The settings given that `model`'s provider does not take (they are left out of its request)."""
        provider, _ = self.config.route(model or self.config.default_model)
        given = [k for k in ("logit_bias", *EXTRA_SETTINGS) if settings.get(k) is not None]
        if provider == "anthropic":
            return given
        return [k for k in given if k in EXTRA_SETTINGS] if provider == "openai" else []

    async def _complete(
        self, request: ModelRequest, on_text: OnText | None, key_ahead: KeyAhead | None
    ) -> Completion:
        provider, model = self.config.route(request.model or self.config.default_model)
        key = await self._owner_key(provider, request.owner, key_ahead)
        provider_sdk = await imported("anthropic" if provider == "anthropic" else "openai")
        try:
            if provider == "anthropic":
                return await self._anthropic(model, request, key, on_text)
            return await self._openai(provider, model, request, key, on_text)
        except provider_sdk.APIStatusError as exc:
            raise _status_error(provider, exc.status_code, self._redact(_error_message(exc), key)) from None
        except provider_sdk.APIConnectionError as exc:
            raise errors.transient(
                f"{provider} could not be reached: {type(exc).__name__}", "ModelUnavailable"
            ) from None

    def read_key_ahead(self, model: str | None, owner: Owner) -> KeyAhead | None:
        """Start reading the owner's key for `model`'s provider now, for the calls the owner is about to
        make (a chat's, while it reads its session); `complete` given it then waits for this read instead
        of making its own."""
        if self.secrets is None:
            return None
        provider, _ = self.config.route(model or self.config.default_model)
        read = asyncio.create_task(self._read_owner_key(provider, owner))
        read.add_done_callback(lambda done: done.cancelled() or done.exception())  # a chat may end first
        return KeyAhead(provider, owner.developer_id, owner.agent_id, read)

    async def _owner_key(self, provider: str, owner: Owner, ahead: KeyAhead | None = None) -> str | None:
        """The provider's key from the owner's secrets (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`,
        `<ENDPOINT>_API_KEY`; an agent's own first), which wins over the operator's; None if there is none.
        A read `ahead` for this provider and owner is waited for instead of a new one."""
        if ahead is not None and ahead.fits(provider, owner):
            return await ahead.read
        return await self._read_owner_key(provider, owner)

    async def _read_owner_key(self, provider: str, owner: Owner) -> str | None:
        if self.secrets is None:
            return None
        name = f"{provider.upper().replace('-', '_')}_API_KEY"
        try:
            found = await self.secrets.reveal(owner.developer_id, owner.agent_id, {name})
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

    def _room(self) -> None:
        """Owners' keys come and go; a plain reset bounds the cache of SDK clients."""
        if len(self._openai_clients) + len(self._anthropic_clients) >= MAX_CLIENTS:
            self._openai_clients.clear()
            self._anthropic_clients.clear()

    def _anthropic_client(self, owner_key: str | None) -> anthropic.AsyncAnthropic:
        """Anthropic's SDK client, made on first use (a missing key is an error only for a task that needs
        it)."""
        if owner_key in self._anthropic_clients:
            return self._anthropic_clients[owner_key]
        config = self.config
        if not (owner_key or config.anthropic_api_key):
            raise errors.permanent(
                "no Anthropic model is configured: set ANTHROPIC_API_KEY (or a secret of that name)",
                "ModelNotConfigured",
            )
        self._room()
        client: anthropic.AsyncAnthropic = sdk("anthropic").AsyncAnthropic(
            api_key=owner_key or config.anthropic_api_key,
            base_url=config.anthropic_base_url,
            max_retries=0,
            timeout=config.request_timeout,
        )
        self._anthropic_clients[owner_key] = client
        return client

    def _openai_client(self, provider: str, owner_key: str | None) -> openai.AsyncOpenAI:
        """OpenAI's SDK client, or one for a named OpenAI-compatible endpoint, made on first use."""
        if (provider, owner_key) in self._openai_clients:
            return self._openai_clients[(provider, owner_key)]
        config = self.config
        if provider == "openai":
            if not (owner_key or config.openai_api_key):
                raise errors.permanent(
                    "no OpenAI model is configured: set OPENAI_API_KEY (or a secret of that name)",
                    "ModelNotConfigured",
                )
            api_key, base_url = owner_key or config.openai_api_key, config.openai_base_url
        else:
            api_key = owner_key or config.endpoint_keys.get(provider) or "unused"
            base_url = config.endpoints[provider]
        self._room()
        client: openai.AsyncOpenAI = sdk("openai").AsyncOpenAI(
            api_key=api_key, base_url=base_url, max_retries=0, timeout=config.request_timeout
        )
        self._openai_clients[(provider, owner_key)] = client
        return client

    async def _openai(
        self, provider: str, model: str, request: ModelRequest, key: str | None, on_text: OnText | None
    ) -> Completion:
        arguments, settings = openai_arguments(provider, model, request)
        body = {**arguments.pop("extra_body", {}), **arguments, **settings}
        client = self._openai_client(provider, key)
        # The SDK's low-level post, with its auth, timeouts and errors, answers the JSON the server sent:
        # `chat.completions.create` walks every argument through its parameter types (0.2 ms of CPU a
        # message: 41 ms for a 200-message history) and builds a typed model of the answer, or of every
        # streamed chunk (a quarter of a streamed chat's CPU), where the arguments and the answer are JSON.
        if on_text is None:
            answer = await _json_answer(provider, client.post("/chat/completions", body=body, cast_to=object))
            if not is_completion(answer):
                raise errors.transient(f"{provider} answered no chat completion", "InvalidModelOutput")
            return answer
        body |= {"stream": True, "stream_options": {"include_usage": True}}
        stream_of = sdk("openai").AsyncStream[object]
        chunks = await client.post(
            "/chat/completions", body=body, cast_to=object, stream=True, stream_cls=stream_of
        )
        return await joined(_json_events(provider, chunks), on_text)

    async def _anthropic(
        self, model: str, request: ModelRequest, key: str | None, on_text: OnText | None
    ) -> Completion:
        arguments = anthropic_arguments(model, request)
        headers = arguments.pop("extra_headers", None)
        body = {**arguments.pop("extra_body", {}), **arguments}
        options: anthropic.RequestOptions = {"headers": headers} if headers else {}
        client = self._anthropic_client(key)
        # As for OpenAI: the SDK's low-level post, answering the JSON the server sent (its message stream
        # builds a typed snapshot of the whole message at every event).
        if on_text is None:
            posted = client.post("/v1/messages", body=body, cast_to=object, options=options)
            message = await _json_answer("anthropic", posted)
        else:
            stream_of = sdk("anthropic").AsyncStream[object]
            events = await client.post(
                "/v1/messages",
                body={**body, "stream": True},
                cast_to=object,
                options=options,
                stream=True,
                stream_cls=stream_of,
            )
            message = await joined_message(_json_events("anthropic", events), on_text)
        return named_back(from_anthropic(message), request.tools)


async def _json_answer(provider: str, posted: Awaitable[object]) -> object:
    """A provider's answer as the SDK read it; a body that is not JSON, or nested past what Python's JSON
    reader takes, is the provider's fault, retried like a 5xx."""
    try:
        return await posted
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        raise _not_json(provider) from None


async def _json_events(provider: str, events: AsyncIterable[object]) -> AsyncIterator[object]:
    """A provider's streamed events as the SDK read them, each held to what `_json_answer` holds one to."""
    try:
        async for event in events:
            yield event
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        raise _not_json(provider) from None


def _not_json(provider: str) -> Exception:
    return errors.transient(f"{provider} answered something that is not JSON", "InvalidModelOutput")


@dataclasses.dataclass(frozen=True)
class KeyAhead:
    """An owner's provider key being read ahead of their calls (ModelClient.read_key_ahead)."""

    provider: str
    developer_id: str
    agent_id: str | None
    read: asyncio.Task[str | None]

    def fits(self, provider: str, owner: Owner) -> bool:
        """Whether this is the key a call of `owner` to `provider` uses (a handoff changes the agent)."""
        return (provider, owner.developer_id, owner.agent_id) == (
            self.provider,
            self.developer_id,
            self.agent_id,
        )


class OpenAIArguments(TypedDict, total=False):
    """What Mint sets of `chat.completions.create`'s arguments (the settings go beside them)."""

    model: Required[str]
    messages: Required[list[Message]]
    tools: list[JsonObject]
    tool_choice: str | JsonObject
    response_format: JsonObject
    extra_body: JsonObject


def openai_arguments(provider: str, model: str, request: ModelRequest) -> tuple[OpenAIArguments, JsonObject]:
    """The arguments of `chat.completions.create` for a request, and the settings OpenAI's API takes (a named
    endpoint's extra ones go in the body)."""
    settings = request.settings
    arguments = OpenAIArguments(model=model, messages=request.messages)
    extra: JsonObject = {k: settings[k] for k in EXTRA_SETTINGS if settings.get(k) is not None}
    if extra and provider != "openai":  # a named OpenAI-compatible endpoint
        arguments["extra_body"] = extra
    if request.tools:
        built_in = [t for t in request.tools if t.get("type") in ANTHROPIC_TOOLS]
        if built_in:
            raise errors.permanent(
                f"tool {tool_name(built_in[0])!r} is Anthropic's {built_in[0].get('type')}: only a Claude "
                f"model takes it, not {model!r}",
                "UnsupportedTool",
            )
        arguments["tools"] = request.tools
        if request.tool_choice is not None:
            arguments["tool_choice"] = request.tool_choice
    if request.response_format:
        arguments["response_format"] = request.response_format
    return arguments, {k: v for k, v in settings.items() if k in SETTINGS and v is not None}


def _check_format(response: Completion, response_format: JsonObject | None) -> None:
    """A JSON answer must parse, and match the schema when one was given; if not, the call is retried."""
    if not response_format or response_format.get("type") not in ("json_object", "json_schema"):
        return
    content = response["choices"][0]["message"].get("content")
    text = (content if isinstance(content, str) else "").strip()
    try:
        value = json.loads(_strip_fence(text))
    except ValueError:
        raise errors.transient(
            f"the model's answer is not JSON: {text[:200]!r}", "InvalidModelOutput"
        ) from None
    spec = response_format.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, dict) else None
    if schema:
        problem = next(iter(jsonschema.Draft202012Validator(schema).iter_errors(value)), None)
        if problem is not None:
            where = "/".join(str(p) for p in problem.absolute_path) or "the top level"
            raise errors.transient(
                f"the model's answer does not match the schema at {where}: {problem.message}",
                "InvalidModelOutput",
            )


def _strip_fence(text: str) -> str:
    """Models asked for JSON sometimes wrap it in a ```json fence. (The twin of workflows.prompts.strip_fence,
    which reads the same answers inside the workflow: neither layer may import the other.)"""
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    return text.strip()


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


def model_client(settings: Settings, secrets: SecretStore | None = None) -> ModelClient:
    """The model layer as the settings configure it (with recordings, when asked for); with `secrets`,
    developers' own provider keys are used for their calls."""
    recordings = None
    if settings.model_replay or settings.model_record:
        recordings = Recordings(
            settings.model_replay or settings.model_record or "", bool(settings.model_replay)
        )
    return ModelClient(settings.model_config(), recordings, secrets)
