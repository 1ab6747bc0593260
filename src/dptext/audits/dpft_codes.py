"""The audit of dpft's label-set codes past ``MAX_DECLARED_SETS``
(``generators/dpft/codes.release_set_marginals``): the noisy counts of each declared label
and of each set size.

D: the label-set codes of 40 documents over ``LABELS`` (7 declared labels, 128 sets: the
marginal path); D' = D + one document holding all of them, the worst case (n + 1 = 8
counts move by 1). Both go through ``release_set_marginals`` itself. The statistic is the
released vector projected on the shift between the two exact count vectors. Negative
controls: ``unbounded`` adds that document twice (a shift of 2·√8 where √8 is claimed),
``half-noise`` halves σ.
"""

from __future__ import annotations

import time

import numpy as np

from dptext.audits.common import audit_claim, canary_copies
from dptext.generators.dpft.codes import LABEL_FIELD, release_set_marginals
from dptext.privacy import PrivacyLedger
from dptext.privacy.auditing import AuditRow, broken_noise
from dptext.privacy.label_sets import set_key

LABELS = tuple("abcdefg")


def _vector(dist) -> np.ndarray:
    return np.asarray([*dist.label_counts, *dist.size_counts], dtype=np.float64)


def audit_dpft_set_codes(epsilon: float = 2.0, delta: float = 1e-3, *, runs: int = 6000,
                         confidence: float = 0.95, broken: str = "none") -> AuditRow:
    """dpft's label and set-size counts (see the module docstring)."""
    copies = canary_copies(broken)
    started = time.perf_counter()
    rng = np.random.default_rng(0)
    sets = [rng.choice(LABELS, rng.integers(0, 4), replace=False) for _ in range(40)]
    codes = [{LABEL_FIELD: set_key(s)} for s in sets]
    sides = [codes, codes + [{LABEL_FIELD: set_key(LABELS)}] * copies]
    exact = [_vector(release_set_marginals(c, LABELS, epsilon=None, delta=0,
                                           ledger=PrivacyLedger())) for c in sides]
    shift = exact[1] - exact[0]
    unit = shift / np.linalg.norm(shift)
    out = []
    ledger = PrivacyLedger()
    with broken_noise(broken):
        for c in sides:
            noisy = []
            for _ in range(runs):
                ledger = PrivacyLedger()
                noisy.append(_vector(release_set_marginals(c, LABELS, epsilon=epsilon,
                                                           delta=delta, ledger=ledger)))
            out.append((np.stack(noisy) - exact[0]) @ unit)
    return audit_claim(
        ledger, f"dpft label-set codes: label and set-size counts (Gaussian, {len(LABELS)} "
        "labels)", [(out[0], out[1], "projection on the shift of one document's counts")],
        confidence=confidence, started=started, broken=broken)
