"""A deterministic stand-in embedder: unit vectors from a hash of the phrase.

Public and data-independent, like a real model, and fast: for audits and tests, where a
real model would only slow down thousands of repeated runs. Never a user-facing default.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np


@lru_cache(maxsize=65_536)  # audits encode the same few phrases thousands of times
def _vector(phrase: str, dim: int) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(phrase.encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).standard_normal(dim)
    v = (v / np.linalg.norm(v)).astype(np.float32)
    v.flags.writeable = False
    return v


@dataclass(frozen=True)
class HashEmbedder:
    """``encode`` maps each phrase to a unit vector seeded by SHA-256 of the phrase."""

    dim_: int = 16
    name: str = "audit-hash"

    @property
    def dim(self) -> int:
        return self.dim_

    def encode(self, phrases: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        out = np.empty((len(phrases), self.dim_), dtype=np.float32)
        for i, p in enumerate(phrases):
            out[i] = _vector(p, self.dim_)
        return out
