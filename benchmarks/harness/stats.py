"""Statistics over seeds: mean ± sd, pooled summaries, Welch's test, Holm's adjustment.

Every figure of a study is a mean over seeds with its sample sd (ddof = 1); one seed is
shown as such, never with a made-up sd of zero.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np


def eps_name(eps: float | None) -> str:
    """ε as a table and a result row write it: ``6``, ``0.5``, ``∞``."""
    return "∞" if eps is not None and math.isinf(eps) else f"{eps:g}"


def mean_sd(values: Iterable[float], digits: int = 3) -> str:
    """``mean ± sd`` over seeds (ddof = 1), ``mean (1 seed)`` for one, ``–`` for none."""
    v = np.asarray(list(values), dtype=float)
    if not v.size:
        return "–"
    if v.size == 1:
        return f"{v[0]:.{digits}f} (1 seed)"
    return f"{v.mean():.{digits}f} ± {v.std(ddof=1):.{digits}f}"


def ratio(numerator: Iterable[float], denominator: float, digits: int = 2) -> str:
    """The mean of ``numerator`` over ``denominator`` (a ceiling, a baseline), or ``–``."""
    v = list(numerator)
    return f"{np.mean(v) / denominator:.{digits}f}" if v and denominator else "–"


@dataclass
class Pooled:
    """Values over seeds kept as count, mean and sum of squared deviations, so a published
    summary (n, mean, sd) and new per-seed values pool exactly (Chan et al.'s merge)."""

    n: int = 0
    mean: float = 0.0
    m2: float = 0.0

    def add(self, n: int, mean: float, sd: float = 0.0) -> None:
        total = self.n + n
        delta = mean - self.mean
        self.m2 += sd ** 2 * (n - 1) + delta ** 2 * self.n * n / total
        self.mean += delta * n / total
        self.n = total

    @property
    def sd(self) -> float:
        """The sample sd over the seeds (n ≥ 2)."""
        return math.sqrt(self.m2 / (self.n - 1))

    def __str__(self) -> str:
        if self.n == 0:
            return "–"
        if self.n == 1:
            return f"{self.mean:.3f} (1 seed)"
        return f"{self.mean:.3f} ± {self.sd:.3f}"


def welch(a: Pooled, b: Pooled) -> tuple[float, float]:
    """Welch's t and its two-sided p for the means of two pooled cells (≥ 2 seeds each)."""
    from scipy.stats import ttest_ind_from_stats

    t, pvalue = ttest_ind_from_stats(a.mean, a.sd, a.n, b.mean, b.sd, b.n, equal_var=False)
    return float(t), float(pvalue)


def holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjustment: the p of each test within its family, so that the
    tests with adjusted p < α are discoveries at family-wise error α."""
    p = np.asarray(pvalues, dtype=float)
    order = np.argsort(p)
    stepped = np.maximum.accumulate(p[order] * (len(p) - np.arange(len(p))))
    adjusted = np.empty_like(p)
    adjusted[order] = np.minimum(stepped, 1.0)
    return adjusted.tolist()
