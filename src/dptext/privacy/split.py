"""Splitting one run's (ε, δ) between its stages, by weight, in one place.

Pure-ε (Laplace) stages take their share of ε and compose by addition. Gaussian
stages compose exactly like a single Gaussian mechanism whose μ = Δ/σ satisfies
μ² = Σ μ_i² (Gaussian differential privacy, Dong, Roth & Su 2019), so the Gaussian
part of the budget is turned into one μ and split as μ_i² = share_i·μ²: the stages
then compose to exactly that part's (ε, δ), instead of the looser sum of per-stage
ε that splitting ε linearly would pay. Each Gaussian stage is expressed as the
(ε_i, δ/k) that gives it the same noise multiplier, which is what the ledger records
and what the PLD accountant composes back. The split is checked against that accountant
on the ledger's own grid (``ledger.pld_epsilon``) and μ shrunk until it fits: at very
large ε (≈ 1,000, an ε → ∞ sanity run) the accountant's pessimistic discretisation puts
a Gaussian ~0.1 % above its analytic ε, more than a fixed margin covers.

Stages named in ``thresholds`` are partition selections (the DP label set,
``privacy.labels``): besides their noise they spend a threshold δ, the chance that
a value held by one document is released. ``THRESHOLD_DELTA_SHARE`` of the run's δ
is set aside for it (all of δ when no stage is Gaussian), and the Gaussian stages
compose to their part of ε at the rest.
"""

from __future__ import annotations

import math
from functools import lru_cache

import dp_accounting

from dptext.privacy.ledger import pld_epsilon
from dptext.privacy.mechanisms import NoiseSpec, gaussian_noise_multiplier

MARGIN = 1e-4  # μ is shrunk by at least this fraction per check against the PLD accountant
THRESHOLD_DELTA_SHARE = 0.5  # of a run's δ, for its partition-selection thresholds


def threshold_deltas(delta: float, thresholds, any_gaussian: bool) -> tuple[float, float]:
    """(δ of each threshold stage, δ left for the Gaussian noise) out of a run's ``delta``."""
    thresholds = list(thresholds)
    if not thresholds:
        return 0.0, delta
    if not 0 < delta < 1:
        raise ValueError(f"a DP label set (partition selection) needs 0 < delta < 1, got "
                         f"{delta!r}")
    reserved = delta * THRESHOLD_DELTA_SHARE if any_gaussian else delta
    return reserved / len(thresholds), delta - reserved


def split_budget(epsilon: float, delta: float, shares: dict[str, float],
                 kinds: dict[str, str], thresholds=()) -> dict[str, NoiseSpec]:
    """Per-stage NoiseSpecs whose composition is at most (ε, δ).

    ``shares`` (non-negative, summing to 1) weight the stages; ``kinds`` gives each
    stage's noise ("laplace" or "gaussian"); ``thresholds`` names the stages that are
    partition selections (their specs carry a ``threshold_delta``).
    """
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a positive finite number, got {epsilon!r}")
    if set(shares) != set(kinds):
        raise ValueError("shares and kinds must name the same stages")
    if any(not (math.isfinite(w) and w >= 0) for w in shares.values()) or \
            not math.isclose(sum(shares.values()), 1.0, rel_tol=1e-9):
        raise ValueError(f"shares must be non-negative and sum to 1, got {shares}")
    active = {s: w for s, w in shares.items() if w > 0}
    pure = {s: w for s, w in active.items() if kinds[s] == "laplace"}
    gauss = {s: w for s, w in active.items() if kinds[s] == "gaussian"}
    unknown = set(thresholds) - set(active)
    if unknown:
        raise ValueError(f"threshold stages {sorted(unknown)} have no share of the budget")
    per_threshold, noise_delta = threshold_deltas(delta, thresholds, bool(gauss))
    thr = {s: per_threshold if s in thresholds else 0.0 for s in active}
    specs = {s: NoiseSpec("laplace", w * epsilon, threshold_delta=thr[s])
             for s, w in pure.items()}
    if gauss:
        if not 0 < noise_delta < 1:
            raise ValueError(f"Gaussian noise needs 0 < delta < 1, got {delta!r}")
        gauss_share = sum(gauss.values())
        per_delta = noise_delta / len(gauss)
        stage_eps = _gaussian_stage_epsilons(gauss_share * epsilon, noise_delta,
                                             tuple(w / gauss_share for w in gauss.values()))
        for s, eps_s in zip(gauss, stage_eps, strict=True):
            specs[s] = NoiseSpec("gaussian", eps_s, per_delta, threshold_delta=thr[s])
    return specs


@lru_cache(maxsize=1024)
def _gaussian_stage_epsilons(epsilon: float, delta: float, weights: tuple[float, ...]
                             ) -> tuple[float, ...]:
    """Per-stage ε (each at δ/k) of k Gaussian stages with μ_i² = w_i·μ², for the largest
    μ whose stages the ledger composes to at most (ε, δ). Cached: a check costs ~0.2 s."""
    per_delta = delta / len(weights)
    mu = (1 - MARGIN) / dp_accounting.get_sigma_gaussian(epsilon, delta)
    for _ in range(50):
        stage_eps = tuple(dp_accounting.get_epsilon_gaussian(1.0 / (mu * math.sqrt(w)),
                                                             per_delta) for w in weights)
        # the multipliers the releases will use, composed as the ledger composes them
        events = [dp_accounting.GaussianDpEvent(gaussian_noise_multiplier(e, per_delta))
                  for e in stage_eps]
        spent = min(sum(stage_eps), pld_epsilon(events, delta, sum(stage_eps)))
        if spent <= epsilon:
            return stage_eps
        # ε(μ) is convex with ε(0) = 0, so ε(c·μ) ≤ c·ε(μ): one step nearly always fits
        mu *= (1 - MARGIN) * epsilon / spent
    raise RuntimeError(f"could not split ε = {epsilon!r} between Gaussian stages")
