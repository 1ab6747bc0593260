"""DP noise mechanisms: the only place in dptext that adds noise to private statistics.

Every mechanism here is stated for one neighbouring relation, ``NEIGHBOURING``: two
corpora are neighbours when one is the other plus or minus one whole document.
A caller hands over the *exact* statistic together with its ``Sensitivity`` — the
largest change one document can make to it, which the caller bounds by
construction — and receives the noisy statistic; the release is written to the
run's ``PrivacyLedger`` at the same moment.

Noise is drawn by OpenDP's samplers, not by ``numpy.random``: naive floating-point
Laplace/Gaussian sampling leaks through the low-order bits of the result
(Mironov 2012), while OpenDP samples exactly on a grid of width 2**GRID_EXPONENT and
states the extra sensitivity its rounding costs in its own privacy map. The scale
is calibrated so that OpenDP's map certifies the target ε (Laplace) or the target
(ε, δ) through the exact Gaussian privacy profile (Balle & Wang 2018).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import dp_accounting
import numpy as np
import opendp.prelude as dp

from dptext.privacy.ledger import PrivacyLedger, Release

dp.enable_features("contrib")

NEIGHBOURING = "add/remove one document"
GRID_EXPONENT = -30  # OpenDP samples noise on multiples of 2**-30
# Observers of released values, for audits only (``auditing.observe_releases``).
_TAPS: list = []

NoiseKind = Literal["laplace", "gaussian"]
NOISE_KINDS: tuple[NoiseKind, ...] = ("laplace", "gaussian")


@dataclass(frozen=True)
class Sensitivity:
    """How far one document can move a statistic, under ``NEIGHBOURING``.

    ``reason`` is the one-line argument, printed in the privacy report.
    """

    l1: float
    l2: float
    reason: str

    def __post_init__(self) -> None:
        if not (self.l1 > 0 and self.l2 > 0 and math.isfinite(self.l1) and math.isfinite(self.l2)):
            raise ValueError(f"sensitivities must be positive and finite, got {self}")


@dataclass(frozen=True)
class NoiseSpec:
    """The guarantee requested for one release: Laplace (pure ε) or Gaussian (ε, δ)."""

    kind: NoiseKind
    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in NOISE_KINDS:
            raise ValueError(f"noise must be one of {NOISE_KINDS}, got {self.kind!r}")
        if not (math.isfinite(self.epsilon) and self.epsilon > 0):
            raise ValueError(f"epsilon must be a positive finite number, got {self.epsilon!r}")
        if self.kind == "laplace" and self.delta != 0:
            raise ValueError("Laplace noise gives pure ε-DP; delta must be 0")
        if self.kind == "gaussian" and not (0 < self.delta < 1):
            raise ValueError(f"Gaussian noise needs 0 < delta < 1, got {self.delta!r}")


def _domain(size: int):
    return dp.vector_domain(dp.atom_domain(T=float, nan=False), size=size)


@lru_cache(maxsize=256)  # measurements are immutable; building one costs milliseconds
def _laplace(size: int, l1: float, epsilon: float):
    """OpenDP Laplace measurement whose own privacy map gives ε ≤ ``epsilon`` at ``l1``."""
    scale = l1 / epsilon
    for _ in range(4):  # the rounding slack is additive in the sensitivity: converges at once
        try:
            meas = dp.m.make_laplace(_domain(size), dp.l1_distance(T=float), scale=scale,
                                     k=GRID_EXPONENT)
            spent = meas.map(l1)
        except dp.OpenDPException as e:  # e.g. a scale that over- or underflows
            raise ValueError(f"cannot calibrate Laplace noise for epsilon={epsilon!r} at "
                             f"sensitivity {l1!r} ({str(e).strip()})") from None
        if spent <= epsilon:
            return meas, scale, spent
        scale *= spent / epsilon * (1 + 1e-12)
    raise RuntimeError("could not calibrate the Laplace scale")  # pragma: no cover


def gaussian_noise_multiplier(epsilon: float, delta: float) -> float:
    """Smallest σ/Δ₂ for which the Gaussian mechanism is (ε, δ)-DP (analytic Gaussian)."""
    return dp_accounting.get_sigma_gaussian(epsilon, delta)


@lru_cache(maxsize=256)
def _gaussian(size: int, l2: float, epsilon: float, delta: float):
    """OpenDP Gaussian measurement calibrated to (ε, δ) at L2 sensitivity ``l2``.

    OpenDP certifies ρ-zCDP for its rounded sensitivity; we read the effective
    sensitivity back from that map (ρ = Δ_eff² / 2σ²) and calibrate σ/Δ_eff with the
    exact Gaussian privacy profile, which is tighter than converting ρ to (ε, δ).
    """
    try:
        multiplier = gaussian_noise_multiplier(epsilon, delta)
    except (ValueError, ArithmeticError) as e:  # the root finder gives up at extreme ε
        raise ValueError(f"cannot calibrate Gaussian noise for epsilon={epsilon!r}, "
                         f"delta={delta!r} ({e}); use a smaller epsilon") from None
    if not (math.isfinite(multiplier) and multiplier > 0):
        raise ValueError(f"cannot calibrate Gaussian noise for epsilon={epsilon!r}, "
                         f"delta={delta!r}; use a smaller epsilon")
    probe = dp.m.make_gaussian(_domain(size), dp.l2_distance(T=float), scale=1.0,
                               k=GRID_EXPONENT)
    l2_effective = math.sqrt(2.0 * probe.map(l2))
    scale = multiplier * l2_effective
    meas = dp.m.make_gaussian(_domain(size), dp.l2_distance(T=float), scale=scale,
                              k=GRID_EXPONENT)
    return meas, scale, l2_effective


def release(
    values: np.ndarray,
    sensitivity: Sensitivity,
    noise: NoiseSpec,
    *,
    ledger: PrivacyLedger,
    name: str,
    partition: str | None = None,
    parallel_group: str | None = None,
    fold: str | None = None,
) -> np.ndarray:
    """Add calibrated noise to ``values`` (an exact statistic of private data) and log it.

    ``partition``/``parallel_group``: releases in one parallel group are computed on
    disjoint sets of documents (e.g. one KDE sketch per class), so the group costs
    what its most expensive partition costs, not the sum (parallel composition).
    ``fold``: the fold of a per-document split (``privacy.selection.fold_of``) the
    statistic was computed on; folds compose in parallel too.
    """
    flat = np.asarray(values, dtype=np.float64).ravel()
    if flat.size == 0:
        raise ValueError(f"release {name!r}: nothing to release")
    if not np.all(np.isfinite(flat)):
        raise ValueError(f"release {name!r}: statistic contains NaN or infinity")
    if noise.kind == "laplace":
        meas, scale, spent = _laplace(flat.size, sensitivity.l1, noise.epsilon)
        record = Release(
            name=name, mechanism="laplace", neighbouring=NEIGHBOURING,
            sensitivity_norm="L1", sensitivity=sensitivity.l1,
            sensitivity_reason=sensitivity.reason, noise_scale=scale, dimension=flat.size,
            epsilon=spent, delta=0.0, noise_multiplier=scale / sensitivity.l1,
            partition=partition, parallel_group=parallel_group, fold=fold,
        )
    else:
        meas, scale, l2_eff = _gaussian(flat.size, sensitivity.l2, noise.epsilon, noise.delta)
        record = Release(
            name=name, mechanism="gaussian", neighbouring=NEIGHBOURING,
            sensitivity_norm="L2", sensitivity=sensitivity.l2,
            sensitivity_reason=sensitivity.reason, noise_scale=scale, dimension=flat.size,
            epsilon=noise.epsilon, delta=noise.delta, noise_multiplier=scale / l2_eff,
            partition=partition, parallel_group=parallel_group, fold=fold,
        )
    noisy = np.asarray(meas(flat.tolist()), dtype=np.float64)
    ledger.record(record)
    for tap in _TAPS:
        tap(name, partition, noisy)
    return noisy.reshape(np.shape(values))
