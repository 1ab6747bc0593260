"""The ``Embedder`` protocol every embedding backend follows, and shared helpers.

An embedder maps phrases to unit-length float32 vectors. ``name`` is a stable id
of the model (not of the object): two embedders with the same name must return
the same vectors, because the on-disk cache (``cache.py``) is keyed by it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

CACHE_ENV = "DPTEXT_CACHE"


@runtime_checkable
class Embedder(Protocol):
    """Phrases in, an ``(n, dim)`` float32 array with L2-normalised rows out.

    Rows come in input order; ``encode([])`` is a ``(0, dim)`` array. One exception
    to unit norm: a phrase a static model cannot represent at all (``model2vec``:
    none of its tokens is known, e.g. ``""``) gets an all-zero row.
    """

    name: str

    @property
    def dim(self) -> int: ...

    def encode(self, phrases: Sequence[str], *, show_progress: bool = False) -> np.ndarray: ...


def default_cache_dir() -> Path:
    """``$DPTEXT_CACHE`` if set (and not empty), else ``~/.cache/dptext``."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "dptext"


def models_dir() -> Path:
    """Where unpacked or distilled models are kept: ``default_cache_dir() / "models"``."""
    return default_cache_dir() / "models"


def set_offline() -> None:
    """Never reach a model hub: every model dptext loads is a local folder."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    # no "Loading weights" bar for a local folder: it would break into the CLI's spinner
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def check_phrases(phrases: Sequence[str]) -> list[str]:
    """A list of the phrases; a ``str`` passed where a sequence is expected is an error."""
    if isinstance(phrases, str):
        raise TypeError("encode() takes a sequence of phrases, not a single string")
    out = list(phrases)
    for i, p in enumerate(out):
        if not isinstance(p, str):
            raise TypeError(f"phrase {i} is {type(p).__name__}, not str: {p!r}")
    return out


def unit_rows(x: np.ndarray, dim: int) -> np.ndarray:
    """``x`` as a C-contiguous float32 ``(n, dim)`` array with unit-norm rows.

    All-zero rows (e.g. a static model that knows no token of the phrase) stay zero.
    """
    x = np.array(x, dtype=np.float32).reshape(-1, dim)  # a copy: never scale the input
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    np.divide(x, norms, out=x, where=norms > 0)
    return np.ascontiguousarray(x)
