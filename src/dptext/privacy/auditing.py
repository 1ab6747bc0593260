"""Privacy auditing: empirical ε lower bounds and hockey-stick tests on neighbouring inputs.

An audit runs a mechanism many times on a corpus D and on a neighbour D' (D plus one
adversarial document), reduces each output to a scalar statistic (ideally the
likelihood ratio of the two output distributions), and then asks two questions:

1. **ε lower bound** (``epsilon_lower_bound``): the largest ε that threshold
   events on the statistic prove with the requested confidence (Clopper–Pearson,
   Bonferroni over events). A correct mechanism never gives a bound above its
   claimed ε, except with probability ≤ 1 − confidence.
2. **Hockey-stick divergence at the claimed ε** (in the style of Google's
   dp-auditorium ``HockeyStickPropertyTester``): (ε, δ)-DP holds iff
   sup_S P[S] − e^ε·Q[S] ≤ δ for both orders of (P, Q). The samples are split; the
   event S is chosen on the first half (the threshold event that maximises the
   empirical divergence) and its divergence is bounded from below on the second
   half. A lower confidence bound above δ is a proven violation.

The helpers here know nothing about the generators; the pipeline-level audits live in
``dptext.audits``. ``broken_noise`` makes deliberately under-noised variants, and
``unbounded`` names the other negative control (one document counted twice, clipping
off): the mistakes an audit must catch.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

from dptext.privacy import mechanisms
from dptext.privacy.ledger import PrivacyLedger
from dptext.privacy.mechanisms import NoiseSpec, Sensitivity, release


# ------------------------------------------------------------------ ε lower bounds
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


def _samples(on_d, on_neighbour, at_least: int) -> tuple[np.ndarray, np.ndarray]:
    """The statistic's samples on D and on D', flat, each side at least ``at_least``."""
    a = np.asarray(on_d, dtype=np.float64).ravel()
    b = np.asarray(on_neighbour, dtype=np.float64).ravel()
    if a.size < at_least or b.size < at_least:
        raise ValueError(f"need at least {at_least} samples on each side")
    return a, b


def epsilon_lower_bound(
    on_d: np.ndarray,
    on_neighbour: np.ndarray,
    *,
    delta: float = 0.0,
    confidence: float = 0.95,
    thresholds: int = 64,
) -> AuditResult:
    """Largest ε that the samples prove, with probability ≥ ``confidence``."""
    a, b = _samples(on_d, on_neighbour, at_least=10)
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


# ------------------------------------------------------------------ hockey-stick tests
#: negative controls: ``half-noise`` halves every noise scale, ``unbounded`` lets one
#: document contribute more than the stated sensitivity (each audit says how)
BROKEN_VARIANTS = ("none", "half-noise", "unbounded")


@dataclass(frozen=True)
class HockeyStick:
    """Lower confidence bound on max_S P[S] − e^ε Q[S] over both orders (P, Q)."""

    epsilon: float
    delta: float
    divergence: float  # lower confidence bound; > delta proves a violation
    estimate: float  # plain estimate on the held-out half, for the report

    @property
    def violation(self) -> bool:
        return self.divergence > self.delta


def _threshold_events(train_p: np.ndarray, train_q: np.ndarray, epsilon: float,
                      thresholds: int) -> tuple[float, str]:
    """The threshold event with the largest empirical P[S] − e^ε Q[S] on training samples."""
    qs = np.unique(np.quantile(np.concatenate([train_p, train_q]),
                               np.linspace(0.0, 1.0, thresholds)))
    p_sorted, q_sorted = np.sort(train_p), np.sort(train_q)
    p_above = 1 - np.searchsorted(p_sorted, qs, side="right") / train_p.size
    q_above = 1 - np.searchsorted(q_sorted, qs, side="right") / train_q.size
    best, best_t, best_dir = -math.inf, 0.0, ">"
    for direction, p, q in ((">", p_above, q_above), ("<=", 1 - p_above, 1 - q_above)):
        div = p - math.exp(epsilon) * q
        i = int(np.argmax(div))
        if div[i] > best:
            best, best_t, best_dir = float(div[i]), float(qs[i]), direction
    return best_t, best_dir


def _in_event(x: np.ndarray, t: float, direction: str) -> int:
    return int(np.sum(x > t) if direction == ">" else np.sum(x <= t))


def hockey_stick_test(
    on_d: np.ndarray,
    on_neighbour: np.ndarray,
    *,
    epsilon: float,
    delta: float,
    confidence: float = 0.95,
    thresholds: int = 128,
    seed: int = 0,
) -> HockeyStick:
    """Test (ε, δ)-DP through the hockey-stick divergence (see the module docstring)."""
    a, b = _samples(on_d, on_neighbour, at_least=20)
    rng = np.random.default_rng(seed)  # the split only; not privacy noise
    a, b = rng.permutation(a), rng.permutation(b)
    a_train, a_test = a[: a.size // 2], a[a.size // 2:]
    b_train, b_test = b[: b.size // 2], b[b.size // 2:]
    alpha = (1 - confidence) / 4  # two orders × two one-sided bounds
    best_lower, best_est = -math.inf, -math.inf
    for p_train, q_train, p_test, q_test in ((a_train, b_train, a_test, b_test),
                                             (b_train, a_train, b_test, a_test)):
        t, direction = _threshold_events(p_train, q_train, epsilon, thresholds)
        kp, kq = _in_event(p_test, t, direction), _in_event(q_test, t, direction)
        n_p, n_q = p_test.size, q_test.size
        p_lo = stats.beta.ppf(alpha, kp, n_p - kp + 1) if kp > 0 else 0.0
        q_hi = stats.beta.ppf(1 - alpha, kq + 1, n_q - kq) if kq < n_q else 1.0
        best_lower = max(best_lower, float(p_lo - math.exp(epsilon) * q_hi))
        best_est = max(best_est, kp / n_p - math.exp(epsilon) * kq / n_q)
    return HockeyStick(epsilon, delta, best_lower, best_est)


@dataclass(frozen=True)
class AuditRow:
    """One line of an audit table: what was claimed, what the samples prove."""

    name: str
    claimed_epsilon: float
    claimed_delta: float
    epsilon_lower_bound: float
    hockey_stick: float  # lower confidence bound on the divergence at the claimed ε
    samples_per_side: int
    statistic: str
    confidence: float
    seconds: float
    broken: str = "none"

    @property
    def violation(self) -> bool:
        """The samples prove, with the stated confidence, that the claim is false."""
        return (self.epsilon_lower_bound > self.claimed_epsilon * (1 + 1e-9)
                or self.hockey_stick > self.claimed_delta)

    def to_dict(self) -> dict:
        return {**asdict(self), "violation": self.violation}


def audit_statistics(
    name: str,
    pairs: Sequence[tuple[np.ndarray, np.ndarray, str]],
    *,
    epsilon: float,
    delta: float,
    confidence: float = 0.95,
    started: float | None = None,
    broken: str = "none",
) -> AuditRow:
    """Audit one mechanism from one or more statistics ``(on_D, on_D', description)``.

    Each statistic gets both tests; confidence is split evenly (Bonferroni) over
    statistics and tests, so the row as a whole holds with ``confidence``.
    """
    if not pairs:
        raise ValueError("nothing to audit")
    per_test = 1 - (1 - confidence) / (2 * len(pairs))
    lower, hs, n = 0.0, -math.inf, 0
    for on_d, on_nb, _ in pairs:
        lower = max(lower, epsilon_lower_bound(on_d, on_nb, delta=delta,
                                               confidence=per_test).epsilon_lower_bound)
        hs = max(hs, hockey_stick_test(on_d, on_nb, epsilon=epsilon, delta=delta,
                                       confidence=per_test).divergence)
        n = max(n, min(len(on_d), len(on_nb)))
    seconds = time.perf_counter() - started if started is not None else 0.0
    return AuditRow(name, epsilon, delta, lower, hs, n, "; ".join(p[2] for p in pairs),
                    confidence, seconds, broken)


# ------------------------------------------------------------------ broken variants
@contextmanager
def broken_noise(variant: str) -> Iterator[None]:
    """Within the block, every mechanism adds ``variant``'s wrong noise but claims the
    right ε: ``half-noise`` halves the Laplace scale and the Gaussian σ. ``none`` and
    ``unbounded`` (which breaks the contribution bound, not the noise) change nothing
    here. A negative control: an audit must flag it."""
    if variant not in BROKEN_VARIANTS:
        raise ValueError(f"broken variant must be one of {', '.join(BROKEN_VARIANTS)}; "
                         f"got {variant!r}")
    if variant != "half-noise":
        yield
        return
    honest_laplace, honest_gaussian = mechanisms._laplace, mechanisms._gaussian

    def half_laplace(size, l1, epsilon):
        meas, scale, _ = honest_laplace(size, l1, 2 * epsilon)  # noise for 2ε ...
        return meas, 2 * scale, epsilon  # ... recorded as if it were ε

    def half_gaussian(size, l2, epsilon, delta):
        meas, scale, l2_eff = honest_gaussian(size, l2 / 2, epsilon, delta)  # half the σ ...
        return meas, 2 * scale, 2 * l2_eff  # ... recorded as the full one

    mechanisms._laplace, mechanisms._gaussian = half_laplace, half_gaussian
    try:
        yield
    finally:
        mechanisms._laplace, mechanisms._gaussian = honest_laplace, honest_gaussian


@contextmanager
def observe_releases() -> Iterator[list[tuple[str, str | None, np.ndarray]]]:
    """Record ``(name, partition, noisy values)`` of every release made in the block.

    For audits only: the noisy values are what the mechanism released, which a
    caller may post-process before anything leaves the process.
    """
    seen: list[tuple[str, str | None, np.ndarray]] = []

    def tap(name: str, partition: str | None, noisy: np.ndarray) -> None:
        seen.append((name, partition, np.array(noisy, copy=True)))

    mechanisms._TAPS.append(tap)
    try:
        yield seen
    finally:
        mechanisms._TAPS.remove(tap)


# ------------------------------------------------------------------ the noise mechanisms
def _shifted_release(noise: NoiseSpec, sens: Sensitivity, shift: float,
                     samples: int, broken: str) -> tuple[np.ndarray, np.ndarray]:
    """The worst neighbouring pair puts the whole shift on one coordinate. Every coordinate
    of a wide release is an independent draw of the same one-coordinate mechanism, so one
    release of 2·samples coordinates gives ``samples`` draws under each neighbour.
    ``unbounded``: the neighbour moves the statistic by twice the stated sensitivity."""
    if broken == "unbounded":
        shift *= 2
    values = np.concatenate([np.zeros(samples), np.full(samples, shift)])
    out = release(values, sens, noise, ledger=PrivacyLedger(), name="audit")
    return out[:samples], out[samples:]


def audit_laplace(epsilon: float = 1.0, *, samples: int = 20_000, confidence: float = 0.95,
                  broken: str = "none") -> AuditRow:
    started = time.perf_counter()
    with broken_noise(broken):
        a, b = _shifted_release(NoiseSpec("laplace", epsilon), Sensitivity(3.0, 3.0, "audit"),
                                3.0, samples, broken)
    return audit_statistics("Laplace mechanism (Δ₁ = 3)", [(a, b, "output coordinate")],
                            epsilon=epsilon, delta=0.0, confidence=confidence,
                            started=started, broken=broken)


def audit_gaussian(epsilon: float = 4.0, delta: float = 1e-3, *, samples: int = 20_000,
                   confidence: float = 0.95, broken: str = "none") -> AuditRow:
    started = time.perf_counter()
    with broken_noise(broken):
        a, b = _shifted_release(NoiseSpec("gaussian", epsilon, delta),
                                Sensitivity(2.0, 2.0, "audit"), 2.0, samples, broken)
    return audit_statistics("Gaussian mechanism (Δ₂ = 2)", [(a, b, "output coordinate")],
                            epsilon=epsilon, delta=delta, confidence=confidence,
                            started=started, broken=broken)
