"""Embedding backends for phrases, and an on-disk cache.

>>> emb = load_embedder("minilm", cache_dir=default_cache_dir())  # public phrases only
>>> x = emb.encode(["heart attack", "football"])   # (2, 384) float32, unit rows

Every model loads offline (no hub): see ``models.py`` for where each comes from.
Only public phrases (vocabulary terms) may go through a cached embedder: the
cache writes phrases to disk (see ``cache.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from dptext.corpus import InputError
from dptext.embed.base import Embedder, default_cache_dir, models_dir
from dptext.embed.cache import CachedEmbedder
from dptext.embed.model2vec_backend import Model2VecEmbedder
from dptext.embed.models import MINILM_ID, MPNET_ID, mpnet_available
from dptext.embed.sentence import SentenceTransformerEmbedder

__all__ = [
    "EMBEDDERS",
    "CachedEmbedder",
    "Embedder",
    "InputError",
    "Model2VecEmbedder",
    "SentenceTransformerEmbedder",
    "check_embedder",
    "default_cache_dir",
    "load_embedder",
    "models_dir",
    "mpnet_available",
    "private_vectors",
]

EMBEDDERS: dict[str, str] = {
    "minilm": "all-MiniLM-L6-v2, 384-d (default; ~1 ms/phrase on 2 CPU cores)",
    "mpnet": "all-mpnet-base-v2, 768-d (the DP-KPS paper's model; ~6x slower; "
    "needs `bash scripts/setup.sh --with-mpnet`)",
    "model2vec": "static 256-d model distilled from MiniLM (very fast, weak; tests and "
    "quick runs; distilled once, ~1 min)",
}

_FACTORIES: dict[str, Callable[[], Embedder]] = {
    "minilm": lambda: SentenceTransformerEmbedder("minilm"),
    "mpnet": lambda: SentenceTransformerEmbedder("mpnet"),
    "model2vec": lambda: Model2VecEmbedder(),
}


def load_embedder(spec: str = "minilm", *, cache_dir: str | Path | None = None) -> Embedder:
    """The embedder named by ``spec``, optionally wrapped in an on-disk cache.

    ``spec``: ``"minilm"`` (default), ``"mpnet"``, ``"model2vec"``, or the path of a
    local sentence-transformers model folder. ``cache_dir``: ``None`` or ``""`` for no
    cache, else a folder (``default_cache_dir()`` is the usual one). The cache stores
    each phrase as its key, so it is opt-in: only callers that embed PUBLIC phrases
    (vocabulary terms) may ask for it, never for private documents. Nothing is
    loaded here; the model loads on the first ``encode``. Bad specs raise ``InputError``.
    """
    inner = _embedder(spec)
    if not cache_dir:
        return inner
    return CachedEmbedder(inner, cache_dir)


def check_embedder(spec: str) -> None:
    """Refuse an embedder ``load_embedder`` would refuse (an unknown name, a folder with no
    model, mpnet not installed) without loading a model: a run checks this before it is
    charged, so a typo costs no privacy budget."""
    _embedder(spec)


def _embedder(spec: str) -> Embedder:
    """The embedder ``spec`` names, made but not loaded (``InputError`` for a bad spec)."""
    if not isinstance(spec, str) or not spec.strip():
        raise InputError(f"embedder must be one of {_choices()}; got {spec!r}")
    spec = spec.strip()
    key = spec.lower()
    if key in _FACTORIES:
        return _FACTORIES[key]()
    if spec in (MINILM_ID, MPNET_ID) or _looks_like_path(spec):
        return SentenceTransformerEmbedder(spec)  # InputError with advice if no model there
    raise InputError(f"unknown embedder {spec!r}: choose {_choices()}")


def _looks_like_path(spec: str) -> bool:
    return "/" in spec or "\\" in spec or spec.startswith((".", "~")) or Path(spec).exists()


def _choices() -> str:
    names = ", ".join(repr(k) for k in EMBEDDERS)
    return f"{names}, or the path of a local sentence-transformers model folder"


_PRIVATE: dict[str, Embedder] = {}  # per process (a Ray worker too): loaded once by name


def private_vectors(embedder: str | Embedder, texts: Sequence[str]) -> np.ndarray:
    """float32 embeddings of PRIVATE texts, never through the on-disk cache.

    ``embedder``: a name (loaded once per process and kept, so a Ray worker loads it once
    for all its batches) or an embedder object."""
    if isinstance(embedder, str):
        emb = _PRIVATE.get(embedder)
        if emb is None:
            emb = _PRIVATE[embedder] = load_embedder(embedder, cache_dir=None)
    else:
        emb = embedder
    if not len(texts):
        return np.zeros((0, emb.dim), dtype=np.float32)
    return np.asarray(emb.encode(list(texts)), dtype=np.float32)
