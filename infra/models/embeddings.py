"""Text embeddings: all-MiniLM-L6-v2 on the CPU, offline (the default), or an OpenAI-protocol model.

An embedder returns unit vectors of its `dimensions` numbers: 384 for all-MiniLM-L6-v2; for an OpenAI-protocol
model, the size it is configured with (one of infra.store.docs.SUPPORTED_DIMENSIONS; Julep's is 1024), which
OpenAI's text-embedding-3 models are asked for. The server's model is MINT_EMBEDDING_MODEL and
MINT_EMBEDDING_DIMENSIONS; a developer may choose their own (PUT /developer/settings): Embedders picks.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from infra.models.minilm import MiniLM
from infra.models.sdks import sdk
from infra.store.docs import DEFAULT_DIMENSIONS, SUPPORTED_DIMENSIONS

LOCAL_MODEL = "all-MiniLM-L6-v2"
MAX_BATCH = 64
MAX_KEPT_EMBEDDERS = 64  # embedders (each an HTTP client) Embedders keeps for developers' choices


class WrongSize(ValueError):
    """A model answered vectors of another size than it is configured for (asking again will not help)."""


class Embedder(Protocol):
    model: str
    dimensions: int

    async def embed(self, texts: list[str], instruction: str | None = None) -> list[list[float]]: ...


class LocalEmbedder:
    """all-MiniLM-L6-v2 run with numpy (infra/models/minilm.py): no download, no network. The model is
    shared by everything in the process; it loads on first use, or before when `load_soon` is called."""

    model = LOCAL_MODEL
    dimensions = DEFAULT_DIMENSIONS

    def __init__(self) -> None:
        self._model: MiniLM | None = None
        self._lock = threading.Lock()

    async def embed(self, texts: list[str], instruction: str | None = None) -> list[list[float]]:
        if not texts:
            return []
        return await asyncio.to_thread(self._encode, [_with_instruction(t, instruction) for t in texts])

    def load_soon(self) -> None:
        """Start loading the model in the background (about a second), so the first search does not wait."""
        threading.Thread(target=self.load, name="embedder-load", daemon=True).start()

    def load(self) -> MiniLM:
        with self._lock:
            if self._model is None:
                self._model = MiniLM.load()
            return self._model

    def _encode(self, texts: list[str]) -> list[list[float]]:
        model = self.load()
        with self._lock:  # one encode at a time: one batch keeps a core busy
            vectors = model.encode(texts)
        return [[float(x) for x in v] for v in vectors]


class OpenAIEmbedder:
    """A model behind OpenAI's embeddings API (MINT_EMBEDDING_MODEL=openai/text-embedding-3-small): OpenAI's own,
    or any server speaking its protocol at OPENAI_BASE_URL (Voyage's voyage-3 through a gateway, a local one)."""

    def __init__(self, model: str, dimensions: int, api_key: str | None, base_url: str | None):
        self.model = model
        self.dimensions = dimensions
        # Only OpenAI's text-embedding-3 models take `dimensions`; others have one size, checked on each answer.
        self._sized = model.startswith("text-embedding-3")
        self._client = sdk("openai").AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=2)

    async def embed(self, texts: list[str], instruction: str | None = None) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), MAX_BATCH):
            batch = [_with_instruction(t, instruction) for t in texts[start : start + MAX_BATCH]]
            answer = await self._client.embeddings.create(
                model=self.model,
                input=batch,
                dimensions=self.dimensions if self._sized else sdk("openai").omit,
            )
            vectors += [item.embedding for item in sorted(answer.data, key=lambda d: d.index)]
        if wrong := sorted({len(v) for v in vectors} - {self.dimensions}):
            sizes = ", ".join(map(str, wrong))
            raise WrongSize(
                f"{self.model} answered vectors of {sizes} numbers, not the {self.dimensions} configured"
            )
        return vectors


_LOCAL = LocalEmbedder()


def load_soon(model: str) -> None:
    """Start loading the local model in the background when `model` (a server's setting) names it."""
    if model == LOCAL_MODEL:
        _LOCAL.load_soon()


async def loaded(model: str) -> None:
    """Return once the local model is loaded, when `model` names it (the load `load_soon` started, or a new
    one if that failed, raising what went wrong)."""
    if model == LOCAL_MODEL:
        await asyncio.to_thread(_LOCAL.load)


@dataclass(frozen=True)
class EmbeddingChoice:
    """A model as settings name it (`all-MiniLM-L6-v2` or `openai/<model>`) and the size of its vectors."""

    model: str
    dimensions: int | None = None  # None: the model's own (384 for the local one; required for openai/)

    def problem(self) -> str | None:
        """What is wrong with this choice, in plain words; None when an embedder can be made of it."""
        if self.model == LOCAL_MODEL:
            if self.dimensions not in (None, DEFAULT_DIMENSIONS):
                return f"{LOCAL_MODEL} makes vectors of {DEFAULT_DIMENSIONS} numbers, not {self.dimensions}"
            return None
        if not self.model.startswith("openai/") or self.model == "openai/":
            return f"unknown embedding model {self.model!r}: use {LOCAL_MODEL!r} or 'openai/<model>'"
        if self.dimensions not in SUPPORTED_DIMENSIONS:
            sizes = ", ".join(map(str, SUPPORTED_DIMENSIONS))
            return f"embedding dimensions must be one of {sizes} for {self.model}, not {self.dimensions}"
        return None


def embedder_for(
    choice: EmbeddingChoice, openai_api_key: str | None = None, openai_base_url: str | None = None
) -> Embedder:
    """The embedder a choice names (ValueError saying what is wrong when it names none)."""
    if problem := choice.problem():
        raise ValueError(problem)
    if choice.model == LOCAL_MODEL:
        return _LOCAL
    model, dimensions = choice.model.removeprefix("openai/"), choice.dimensions or DEFAULT_DIMENSIONS
    return OpenAIEmbedder(model, dimensions, openai_api_key, openai_base_url)


class Embedders:
    """Each developer's embedder: the one their settings choose, else the server's. One embedder (and its
    HTTP client) per distinct choice, shared."""

    def __init__(
        self,
        default: Embedder,
        chosen: Callable[[str], Awaitable[EmbeddingChoice | None]],
        openai_api_key: str | None = None,
        openai_base_url: str | None = None,
    ):
        self.default = default
        self._chosen = chosen  # developer id -> their choice (None: the server's)
        self._openai = (openai_api_key, openai_base_url)
        self._made: dict[EmbeddingChoice, Embedder] = {}

    async def of(self, developer_id: str) -> Embedder:
        choice = await self._chosen(developer_id)
        if choice is None:
            return self.default
        if choice not in self._made:
            if len(self._made) >= MAX_KEPT_EMBEDDERS:  # developers may choose many: the oldest goes
                del self._made[next(iter(self._made))]
            self._made[choice] = embedder_for(choice, *self._openai)
        return self._made[choice]


def _with_instruction(text: str, instruction: str | None) -> str:
    return f"{instruction.strip()} {text}" if instruction and instruction.strip() else text
