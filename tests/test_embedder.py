"""The local embedder (infra/models/minilm.py) gives the vectors sentence-transformers gives for
all-MiniLM-L6-v2, so that vectors stored by either stay valid.

tests/fixtures/embedder_reference.json holds sentence-transformers' vectors (with torch, `normalize_embeddings`,
batch size 32; its `made_with` says which versions) for a few texts: short, accented, CJK, code, emoji, one
cut at 256 tokens.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from infra.models.embeddings import LOCAL_MODEL, EmbeddingChoice, LocalEmbedder, embedder_for
from infra.models.minilm import MAX_TOKENS, MiniLM, model_zip
from infra.models.wordpiece import WordPiece

REFERENCE = json.loads((Path(__file__).parent / "fixtures" / "embedder_reference.json").read_text())
TEXTS: list[str] = REFERENCE["texts"]
EXPECTED = np.array(REFERENCE["vectors"], dtype=np.float32)


@pytest.fixture(scope="module")
def model() -> MiniLM:
    return MiniLM.load()


# Texts and the ids the `tokenizers` library gives them with the model's tokenizer.json: special tokens
# written in the text, final sigma, dotted capital I, a word too long to cut, ligatures, a zero-width space and
# no-break space, controls.
TOKENIZED = {
    "[CLS] hello [SEP] x[MASK]y": [101, 101, 7592, 102, 1060, 103, 1061, 102],
    "ΣΑΣ ΟΔΟΣ": [101, 1173, 14608, 29733, 1169, 29722, 29730, 29733, 102],
    "İstanbul": [101, 9960, 102],
    "a" * 150 + " ok": [101, 100, 7929, 102],
    "ﬁnance ①②": [101, 1984, 7229, 3401, 100, 102],
    "naïve\u200bzero\xa0nbsp": [101, 15743, 6290, 2080, 1050, 5910, 2361, 102],
    "x\x1cy\x85z": [101, 1060, 2100, 2480, 102],
}


def test_tokens_match_the_tokenizers_library() -> None:
    with zipfile.ZipFile(model_zip()) as files:
        tokenizer = WordPiece(files.read("tokenizer.json").decode(), MAX_TOKENS)
    assert {text: tokenizer.encode(text) for text in TOKENIZED} == TOKENIZED
    assert len(tokenizer.encode(TEXTS[-1])) == MAX_TOKENS


def test_vectors_match_sentence_transformers(model: MiniLM) -> None:
    vectors = model.encode(TEXTS)
    assert vectors.shape == (len(TEXTS), 384)
    cosines = (vectors * EXPECTED).sum(axis=1) / np.linalg.norm(EXPECTED, axis=1)
    assert cosines.min() >= 0.99999, cosines
    assert np.abs(vectors - EXPECTED).max() < 1e-5


def test_batches_and_padding_leave_vectors_alike(model: MiniLM) -> None:
    together = model.encode(TEXTS)
    in_threes = model.encode(TEXTS, batch_size=3)
    alone = np.stack([model.encode([text])[0] for text in TEXTS])
    assert np.abs(together - in_threes).max() < 1e-5
    assert np.abs(together - alone).max() < 1e-5
    assert np.allclose(np.linalg.norm(together, axis=1), 1, atol=1e-5)


def test_long_text_is_cut_where_sentence_transformers_cuts_it(model: MiniLM) -> None:
    long_text = TEXTS[-1]
    assert len(long_text.split()) > MAX_TOKENS
    more = model.encode([long_text + " and then many more words that fall past the cut"])[0]
    assert np.abs(more - EXPECTED[-1]).max() < 1e-5


async def test_local_embedder_embeds_with_an_instruction() -> None:
    embedder = embedder_for(EmbeddingChoice(LOCAL_MODEL))
    assert isinstance(embedder, LocalEmbedder)
    embedder.load_soon()
    instruction, text = "Represent this sentence for searching relevant passages:", "vector search with HNSW"
    [vector] = await embedder.embed([text], instruction)
    assert TEXTS[5] == f"{instruction} {text}"
    assert np.abs(np.array(vector) - EXPECTED[5]).max() < 1e-5
    assert await embedder.embed([]) == []
