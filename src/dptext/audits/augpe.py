"""Audit of Aug-PE's vote releases composed over T iterations.

The real privacy code runs: ``plan_noise`` splits (ε, δ) over the T vote releases,
``release_votes`` releases every class's nearest-neighbour vote histogram, and
``select_parents`` draws the next generation from the noisy counts. Only the LLM is
replaced: a variation is the parent's embedding plus a small public random step (the
stand-in is allowed here because it is post-processing — what the LLM writes never
touches private data). D' adds one canary embedding to a class.

Classes hold disjoint documents (parallel composition), so each class of a run is an
independent draw of the neighbouring pair: K classes give K samples per side. The
statistic is the likelihood ratio of the whole transcript, Σ_t ⟨y_t − m_t, Δ_t⟩/σ_t², where
m_t are D's exact votes and Δ_t the canary's one vote, both computed by the auditor from
the public populations — the optimal statistic for the adaptive composition.
"""

from __future__ import annotations

import time

import numpy as np

from dptext.audits.common import audit_claim, canary_copies
from dptext.privacy import PrivacyLedger
from dptext.privacy.auditing import AuditRow, broken_noise


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def audit_augpe(epsilon: float = 2.0, delta: float = 1e-2, iterations: int = 3, *,
                runs: int = 8, classes: int = 200, per_class: int = 6,
                confidence: float = 0.95, broken: str = "none") -> AuditRow:
    from dptext.generators.augpe.privacy import nearest_votes, plan_noise, release_votes, vote_stage
    from dptext.generators.augpe.select import select_parents

    started = time.perf_counter()
    noise = plan_noise(epsilon, delta, iterations, None)  # plain AugPE: votes only
    rng = np.random.default_rng(0)
    dim = 8
    private = _unit(rng.standard_normal((20, dim)))
    initial = _unit(rng.standard_normal((per_class, dim)))
    canary = _unit(initial[2] + 0.01)[None]
    neighbour = np.vstack([private, *[canary] * canary_copies(broken)])
    samples: dict[str, list[float]] = {"D": [], "D'": []}
    ledger = PrivacyLedger()
    with broken_noise(broken):
        for name, docs in (("D", private), ("D'", neighbour)):
            for run in range(runs):
                public = np.random.default_rng([1, run])  # selection and variations
                ledger = PrivacyLedger()
                pops = {c: initial for c in range(classes)}
                stat = np.zeros(classes)
                for t in range(1, iterations + 1):
                    spec = noise[vote_stage(t)]
                    noisy = release_votes(dict.fromkeys(pops, docs), pops, spec, ledger, t)
                    sigma = ledger.releases[-1].noise_scale
                    for c, syn in pops.items():
                        exact = nearest_votes(private, syn)
                        shift = nearest_votes(canary, syn)  # the canary's one vote
                        stat[c] += float((noisy[c] - exact) @ shift) / sigma**2
                        parents = select_parents(noisy[c], per_class, rng=public)
                        pops[c] = _unit(syn[parents]
                                        + 0.2 * public.standard_normal((per_class, dim)))
                samples[name].extend(stat.tolist())
    return audit_claim(
        ledger, f"Aug-PE votes over T = {iterations} iterations (Gaussian, composed)",
        [(np.array(samples["D"]), np.array(samples["D'"]),
          "likelihood ratio of the T vote releases (the canary's votes)")],
        confidence=confidence, started=started, broken=broken)
