"""DP-SGD as a ledger release: calibrating the noise multiplier and recording the run.

Opacus clips each document's gradient to L2 norm ``max_grad_norm`` (C) and adds
Gaussian noise N(0, σ²C²) to the sum of the clipped gradients at every step; batches
are Poisson samples of documents at rate q. Under add/remove-one-document neighbours
one step is the Poisson-subsampled Gaussian mechanism with sensitivity C and noise
multiplier σ; ``steps`` of them compose. The record below carries exactly those
numbers, and ``compose`` (ledger.py) accounts them with dp-accounting's PLD accountant
together with every other release of the run.
"""

from __future__ import annotations

import logging
import math

from dptext.privacy.ledger import Release, compose
from dptext.privacy.mechanisms import NEIGHBOURING

DPSGD_SENSITIVITY_REASON = (
    "per-document gradients clipped to L2 norm C (one document = one sample, Poisson "
    "sampled); adding/removing a document moves the summed gradient by at most C"
)


def dp_sgd_release(*, name: str, noise_multiplier: float, sampling_rate: float, steps: int,
                   max_grad_norm: float, epsilon: float, delta: float,
                   dimension: int = 0) -> Release:
    if not (0 < sampling_rate <= 1):
        raise ValueError(f"sampling rate must be in (0, 1], got {sampling_rate}")
    if steps < 1 or noise_multiplier <= 0:
        raise ValueError("DP-SGD needs at least one step and a positive noise multiplier")
    return Release(
        name=name, mechanism="dp-sgd", neighbouring=NEIGHBOURING, sensitivity_norm="L2",
        sensitivity=max_grad_norm, sensitivity_reason=DPSGD_SENSITIVITY_REASON,
        noise_scale=noise_multiplier * max_grad_norm, noise_multiplier=noise_multiplier,
        dimension=dimension, epsilon=epsilon, delta=delta,
        sampling_rate=sampling_rate, steps=steps,
    )


def calibrate_dp_sgd(*, epsilon_total: float, delta: float, sampling_rate: float, steps: int,
                     prior: list[Release] | tuple[Release, ...] = (), max_grad_norm: float = 1.0,
                     name: str = "dp-sgd", rtol: float = 5e-3) -> Release:
    """The DP-SGD release with the smallest σ whose composition with ``prior`` stays ≤ ε.

    ``delta`` is the DP-SGD share of δ (the run's δ is the sum over releases). The
    returned record's ``epsilon`` is what the PLD accountant gives for the DP-SGD run
    alone; the bisection checks the composed ε of ``[*prior, record]``.
    """
    def record(sigma: float, epsilon: float = math.inf) -> Release:
        return dp_sgd_release(name=name, noise_multiplier=sigma, sampling_rate=sampling_rate,
                              steps=steps, max_grad_norm=max_grad_norm, epsilon=epsilon,
                              delta=delta)

    def spent(sigma: float) -> float:
        # a coarse PLD grid: still a pessimistic upper bound, ~10x faster; the result is
        # re-checked with the ledger's own accountant below
        return quick_epsilon([*prior, record(sigma)], interval=1e-3)

    if compose(list(prior)).epsilon >= epsilon_total:
        raise ValueError(f"the earlier releases already spend ε ≥ {epsilon_total:g}")
    # bracket with the (fast, looser) RDP accountant: its σ is an upper bound for PLD's
    hi = _rdp_sigma(epsilon_total, delta, sampling_rate, steps, prior, max_grad_norm, name)
    lo = hi / 2
    while spent(hi) > epsilon_total:  # pragma: no cover - RDP is never tighter than PLD
        lo, hi = hi, hi * 1.5
    while hi - lo > rtol * hi:
        mid = (lo + hi) / 2
        if spent(mid) > epsilon_total:
            lo = mid
        else:
            hi = mid
    while compose([*prior, record(hi)]).epsilon > epsilon_total:  # pragma: no cover
        hi *= 1 + rtol
    return record(hi, epsilon=compose([record(hi)]).epsilon)


def quick_epsilon(releases: list[Release], interval: float = 1e-3) -> float:
    """Composed ε on a coarse PLD grid: a (slightly looser) upper bound, for progress bars."""
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant

    acc = pld_privacy_accountant.PLDAccountant(
        neighboring_relation=dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE,
        value_discretization_interval=interval)
    for r in releases:
        if r.mechanism != "laplace":
            acc.compose(r.dp_event())
    # a threshold's δ (partition selection) is no part of the noise's loss distribution
    delta = sum(r.delta - r.threshold_delta for r in releases if r.mechanism != "laplace")
    return sum(r.epsilon for r in releases if r.mechanism == "laplace") + acc.get_epsilon(delta)


def _rdp_sigma(epsilon_total, delta, sampling_rate, steps, prior, max_grad_norm, name) -> float:
    import dp_accounting
    from dp_accounting.rdp import rdp_privacy_accountant

    pure = sum(r.epsilon for r in prior if r.mechanism == "laplace")
    d_total = delta + sum(r.delta - r.threshold_delta for r in prior if r.mechanism != "laplace")

    def eps(sigma: float) -> float:
        acc = rdp_privacy_accountant.RdpAccountant(
            neighboring_relation=dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE)
        for r in prior:
            if r.mechanism != "laplace":
                acc.compose(r.dp_event())
        acc.compose(dp_sgd_release(name=name, noise_multiplier=sigma, sampling_rate=sampling_rate,
                                   steps=steps, max_grad_norm=max_grad_norm, epsilon=math.inf,
                                   delta=delta).dp_event())
        return pure + acc.get_epsilon(d_total)

    logging.getLogger("absl").setLevel(logging.ERROR)  # RDP's "failed to converge" chatter
    lo, hi = 0.05, 1.0
    while eps(hi) > epsilon_total:
        lo, hi = hi, hi * 2
        if hi > 1e5:
            raise ValueError("no noise multiplier reaches this ε; raise ε or lower the steps")
    while hi - lo > 1e-3 * hi:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if eps(mid) > epsilon_total else (lo, mid)
    return hi
