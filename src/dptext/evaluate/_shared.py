"""Small helpers shared by the evaluation modules: tokens, sentences, embeddings.

The embedding model comes from ``dptext.embed`` (the project's loader, with its
cache and offline defaults); evaluation never loads models by itself.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from dptext.text import tokenize

__all__ = ["Encoder", "get_encoder", "get_torch_model", "split_sentences", "tokenize"]

# Sentence boundary: ., ! or ? (optionally followed by a closing quote/bracket), then space.
_SENT_RE = re.compile(r"(?<=[.!?])[\"')\]]?\s+|\n{2,}")


def split_sentences(text: str) -> list[str]:
    """Split a document into sentences (a light rule: end punctuation, then whitespace)."""
    return [s.strip() for s in _SENT_RE.split(text) if s and s.strip()]


class Encoder:
    """``encode(texts) -> (n, d) float32`` with unit-norm rows (via ``dptext.embed``)."""

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
    from dptext.embed import load_embedder

    return load_embedder(name)  # no on-disk cache: evaluation embeds private documents


def get_torch_model(name: str = "minilm"):
    """The sentence-transformers module behind an embedder, for full fine-tuning."""
    from dptext.embed import load_embedder

    emb = load_embedder(name, cache_dir="")  # the bare backend, not the cache wrapper
    load = getattr(emb, "_load", None)  # SentenceTransformerEmbedder loads lazily
    model = load() if load is not None else None
    if model is None or not hasattr(model, "tokenize"):
        raise ValueError(f"the embedder {name!r} is not a sentence-transformers model; "
                         "full fine-tuning needs a sentence-transformers model")
    return model


@lru_cache(maxsize=4)
def get_encoder(name: str = "minilm") -> Encoder:
    return Encoder(name)
