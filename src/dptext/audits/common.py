"""Pieces the pipeline audits share: quiet runs, broken-variant plumbing, the Gaussian
likelihood-ratio statistic, and memoised calibration for thousands of repeated fits."""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from dptext.privacy.auditing import BROKEN_VARIANTS, AuditRow, audit_statistics


@dataclass(frozen=True)
class RatioSamples:
    """A row's Gaussian likelihood ratios on D and D', the ledger of its last run, and
    ``shift`` = Σ‖Δ‖²/σ² at the ledger's σ: for one document and honest noise the ratio
    is N(c, shift) on D and N(c + shift, shift) on D'. ``moments`` compares the samples
    with that law — a cheap check (CI's) that halved noise (variance shift/4) or a document
    counted twice (mean shift 2·shift) breaks; the DP test itself is ``audit_claim``."""

    on_d: np.ndarray
    on_neighbour: np.ndarray
    ledger: object
    shift: float

    def audit(self, name: str, statistic: str, *, confidence: float, started: float,
              broken: str) -> AuditRow:
        """The DP test of these samples against the ledger's claim (``audit_claim``)."""
        return audit_claim(self.ledger, name, [(self.on_d, self.on_neighbour, statistic)],
                           confidence=confidence, started=started, broken=broken)

    def moments(self) -> tuple[float, float]:
        """(variance on D, mean shift D → D'), each relative to ``shift`` (1 when honest)."""
        return (float(np.var(self.on_d, ddof=1)) / self.shift,
                float(np.mean(self.on_neighbour) - np.mean(self.on_d)) / self.shift)


def audit_claim(ledger, name: str, pairs: Sequence[tuple[np.ndarray, np.ndarray, str]], *,
                confidence: float, started: float, broken: str) -> AuditRow:
    """``audit_statistics`` against the (ε, δ) that ``ledger`` (a run's, or the last of
    many identical runs') composes: the claim a row tests is always the ledger's."""
    claimed = ledger.guarantee()
    return audit_statistics(name, pairs, epsilon=claimed.epsilon, delta=claimed.delta,
                            confidence=confidence, started=started, broken=broken)


def noise_scales(ledger) -> dict[str, float]:
    """Each release's noise scale in ``ledger``, by its name without the parenthesised
    detail ("label set (label)" → "label set")."""
    return {r.name.split(" (")[0]: r.noise_scale for r in ledger.releases}


def terms(n: int) -> tuple[str, ...]:
    """A public vocabulary of ``n`` made-up terms."""
    return tuple(f"t{i:03d}" for i in range(n))


@contextmanager
def quiet() -> Iterator[None]:
    """Silence the curator warnings (weak classes, few vocabulary terms) of repeated fits."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def canary_copies(broken: str) -> int:
    """How often the canary document enters D': twice for the ``unbounded`` negative control
    (a document counted twice: its contribution exceeds the sensitivity the code states)."""
    if broken not in BROKEN_VARIANTS:
        raise ValueError(f"broken variant must be one of {', '.join(BROKEN_VARIANTS)}; "
                         f"got {broken!r}")
    return 2 if broken == "unbounded" else 1


def gaussian_llr(noisy: Sequence[np.ndarray], shifts: Sequence[np.ndarray],
                 sigmas: Sequence[float]) -> float:
    """Σ_s ⟨y_s, Δ_s⟩ / σ_s²: the log-likelihood ratio (up to a constant shared by D and D')
    of composed Gaussian releases y_s whose means differ by Δ_s between D' and D — the
    optimal statistic for the composition, so the audit sees the composed μ = √(Σ‖Δ_s‖²/σ_s²)."""
    return float(sum(float(np.dot(np.ravel(y), np.ravel(d))) / s**2
                     for y, d, s in zip(noisy, shifts, sigmas, strict=True)))


@contextmanager
def memoised_calibration() -> Iterator[None]:
    """Within the block, DP-KPS computes its budget split and noise multiplier once per
    distinct argument instead of on every call. Both are pure functions of public
    numbers, so the releases are unchanged; thousands of repeated fits get ~4x faster."""
    from dptext.generators.kps import budget as kps
    from dptext.privacy.split import split_budget

    @lru_cache(maxsize=64)
    def split(epsilon, delta, shares, kinds, thresholds):
        return split_budget(epsilon, delta, dict(shares), dict(kinds), list(thresholds))

    def cached_split(epsilon, delta, shares, kinds, thresholds=()):
        return dict(split(epsilon, delta, tuple(sorted(shares.items())),
                          tuple(sorted(kinds.items())), tuple(thresholds)))

    honest = kps.split_budget, kps.gaussian_noise_multiplier
    kps.split_budget = cached_split
    kps.gaussian_noise_multiplier = lru_cache(maxsize=64)(honest[1])
    try:
        yield
    finally:
        kps.split_budget, kps.gaussian_noise_multiplier = honest


@contextmanager
def swapped(owner, name: str, replacement) -> Iterator[None]:
    """Within the block ``owner.name`` is ``replacement`` (a negative control's broken
    piece); the honest one is back afterwards."""
    honest = getattr(owner, name)
    setattr(owner, name, replacement)
    try:
        yield
    finally:
        setattr(owner, name, honest)
