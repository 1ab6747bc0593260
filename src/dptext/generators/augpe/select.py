"""Choosing the parents of the next generation from a noisy vote histogram.

Pure post-processing of a DP release: it reads only the noisy counts (and public
parameters), so it costs no privacy. The randomness here is ordinary seeded sampling,
not DP noise.
"""

from __future__ import annotations

import math

import numpy as np

SELECTIONS = ("sample", "rank")


def select_parents(noisy: np.ndarray, n: int, *, mode: str = "sample", threshold: float = 0.0,
                   copies: int = 2, rng: np.random.Generator) -> np.ndarray:
    """Indices of ``n`` parents (with repetition) into the histogram's samples.

    ``sample``: draw ∝ the noisy count, counts below ``threshold`` (and negative ones)
    set to 0; uniform when nothing is left (all signal drowned in noise).
    ``rank``: the ⌈n / copies⌉ samples with the largest noisy counts, ``copies`` each.
    """
    noisy = np.asarray(noisy, dtype=np.float64)
    if noisy.size == 0 or n <= 0:
        return np.empty(0, dtype=np.int64)
    if mode == "rank":
        if not (isinstance(copies, int) and copies >= 1):
            raise ValueError(f"copies must be a positive integer, got {copies!r}")
        top = np.argsort(-noisy, kind="stable")[: math.ceil(n / copies)]
        return np.resize(np.repeat(top, copies), n)
    if mode != "sample":
        raise ValueError(f"selection must be one of {', '.join(SELECTIONS)}; got {mode!r}")
    weights = np.where(noisy >= threshold, np.maximum(noisy, 0.0), 0.0)
    total = weights.sum()
    p = weights / total if total > 0 else None
    return rng.choice(noisy.size, size=n, replace=True, p=p)
