"""The audit of DP-KPS's multi-label path (``generators/kps/multilabel.py``): the class ×
term histogram when a document counts in the row of each of its labels.

D: a small multi-label corpus; D' = D + one document holding ``LABELS_OF_PLANTED`` labels
(more than the cap ``K``) and S terms. Both go through the fit's own steps — the labels
capped at K with public randomness (``privacy.label_sets.cap_label_sets``), one row per
(document, label), the exact counts (``keyphrases.histogram.class_term_counts``), the release
with the multi-label sensitivity (``release_counts(rows=K)``: L2 √(K·S)). The statistic
is the released matrix projected on the shift between the two exact count matrices.
Negative controls: ``unbounded`` skips the cap (the planted document moves all its
labels' rows while √(K·S) is claimed), ``half-noise`` halves σ.
"""

from __future__ import annotations

import time

import numpy as np

from dptext.audits.common import audit_claim, canary_copies
from dptext.keyphrases import histogram
from dptext.privacy import NoiseSpec, PrivacyLedger
from dptext.privacy.auditing import AuditRow, broken_noise, observe_releases
from dptext.privacy.label_sets import cap_label_sets

S, K, TERMS = 3, 2, 8
LABELS = tuple(f"c{k}" for k in range(10))
PUBLIC = tuple(f"t{i}" for i in range(TERMS))
LABELS_OF_PLANTED = 10


def _rows(firsts, sets, k_max: int, rng) -> tuple[list[np.ndarray], np.ndarray]:
    """One (terms, class id) row per (document, label of its capped set)."""
    capped = cap_label_sets(sets, k_max, rng)
    pairs = [(f, LABELS.index(lab)) for f, s in zip(firsts, capped, strict=True) for lab in s]
    return [f for f, _ in pairs], np.array([c for _, c in pairs], dtype=np.int64)


def audit_multilabel_histogram(epsilon: float = 2.0, delta: float = 1e-3, *,
                               runs: int = 5000, confidence: float = 0.95,
                               broken: str = "none") -> AuditRow:
    """The Gaussian class × term histogram of a multi-label corpus (see the module
    docstring)."""
    canary_copies(broken)  # validates ``broken``
    started = time.perf_counter()
    rng = np.random.default_rng(0)
    firsts = [rng.choice(TERMS, S, replace=False) for _ in range(40)]
    sets = [tuple(sorted(rng.choice(LABELS, rng.integers(0, 4), replace=False)))
            for _ in range(40)]
    cap = len(LABELS) if broken == "unbounded" else K
    spec = NoiseSpec("gaussian", epsilon, delta)
    corpora = [(firsts, sets),
               ([*firsts, np.array([0, 1, 2])], [*sets, LABELS[:LABELS_OF_PLANTED]])]
    # the cap's public randomness is the same on both sides (a fixed seed): the shift
    # is the planted document's own rows
    rows = [_rows(f, s, cap, np.random.default_rng(1)) for f, s in corpora]
    exact = [histogram.class_term_counts(f, i, len(LABELS), TERMS).toarray()
             for f, i in rows]
    shift = (exact[1] - exact[0]).ravel()
    unit = shift / np.linalg.norm(shift)
    out = []
    ledger = PrivacyLedger()
    with broken_noise(broken):
        for counts in exact:
            with observe_releases() as seen:
                for _ in range(runs):
                    ledger = PrivacyLedger()
                    histogram.release_counts(
                        histogram.sparse.csr_matrix(counts), LABELS, PUBLIC, spec, ledger,
                        terms_per_doc=S, false_cells=1.0, max_terms=TERMS, rows=K)
            noisy = np.stack([v.ravel() for _, _, v in seen])
            out.append((noisy - exact[0].ravel()) @ unit)
    return audit_claim(
        ledger, f"multi-label class × term histogram (Gaussian, S = {S}, ≤ {K} labels a "
        "document)", [(out[0], out[1], "projection on the shift of one document's rows")],
        confidence=confidence, started=started, broken=broken)
