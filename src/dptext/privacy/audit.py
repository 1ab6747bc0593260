"""Empirical lower bounds on ε from outputs on neighbouring inputs.

Given samples of a scalar statistic of a mechanism's output on a corpus D and on
a neighbour D', any event S gives the bound ε ≥ log((P[S] − δ) / Q[S]). We scan
threshold events {x > t} and {x ≤ t} in both directions, replace P by a
Clopper–Pearson lower confidence bound and Q by an upper one (Bonferroni over all
events tried), and report the largest bound. With probability at least
``confidence`` the reported value is a true lower bound on the mechanism's ε, so a
correct mechanism passes and an under-noised one is caught when the statistic is
powerful enough (a likelihood-ratio statistic is optimal).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class AuditResult:
    epsilon_lower_bound: float
    threshold: float
    direction: str
    events_tested: int
    samples: int


def _cp_lower(k: np.ndarray, n: int, alpha: float) -> np.ndarray:
    return np.where(k > 0, stats.beta.ppf(alpha, k, n - k + 1), 0.0)


def _cp_upper(k: np.ndarray, n: int, alpha: float) -> np.ndarray:
    return np.where(k < n, stats.beta.ppf(1 - alpha, k + 1, n - k), 1.0)


def epsilon_lower_bound(
    on_d: np.ndarray,
    on_neighbour: np.ndarray,
    *,
    delta: float = 0.0,
    confidence: float = 0.95,
    thresholds: int = 64,
) -> AuditResult:
    """Largest ε that the samples prove, with probability ≥ ``confidence``."""
    a = np.asarray(on_d, dtype=np.float64).ravel()
    b = np.asarray(on_neighbour, dtype=np.float64).ravel()
    if a.size < 10 or b.size < 10:
        raise ValueError("need at least 10 samples on each side")
    qs = np.unique(np.quantile(np.concatenate([a, b]), np.linspace(0.005, 0.995, thresholds)))
    a_sorted, b_sorted = np.sort(a), np.sort(b)
    above_a = a.size - np.searchsorted(a_sorted, qs, side="right")
    above_b = b.size - np.searchsorted(b_sorted, qs, side="right")
    # events: {x > t} and {x <= t}, each as P=D vs Q=D' and P=D' vs Q=D
    events = [
        ("D: x > t", above_a, a.size, above_b, b.size),
        ("D': x > t", above_b, b.size, above_a, a.size),
        ("D: x <= t", a.size - above_a, a.size, b.size - above_b, b.size),
        ("D': x <= t", b.size - above_b, b.size, a.size - above_a, a.size),
    ]
    n_events = len(events) * qs.size
    alpha = (1 - confidence) / (2 * n_events)  # two bounds per event
    best = AuditResult(0.0, float("nan"), "none", n_events, int(a.size + b.size))
    for direction, kp, np_, kq, nq in events:
        p_lo = _cp_lower(kp, np_, alpha) - delta
        q_hi = _cp_upper(kq, nq, alpha)
        with np.errstate(divide="ignore", invalid="ignore"):
            eps = np.where(p_lo > 0, np.log(p_lo / q_hi), -math.inf)
        i = int(np.argmax(eps))
        if eps[i] > best.epsilon_lower_bound:
            best = AuditResult(float(eps[i]), float(qs[i]), direction, n_events, best.samples)
    return best
