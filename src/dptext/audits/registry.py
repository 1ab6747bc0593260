"""The audit table of ``dptext audit``: one entry per row, in the order they are shown.

An entry maps the row's ``--only`` name to a function ``(n, confidence, broken) -> AuditRow``
where ``n(k)`` scales a default sample count ``k`` by ``--runs``. To add a row, write its
audit function (see ``kps.py`` for examples) and add one line here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from dptext.audits.augpe import audit_augpe
from dptext.audits.augpe_default import audit_augpe_default
from dptext.audits.dpft_codes import audit_dpft_set_codes
from dptext.audits.dpft_loop import audit_dpft_training
from dptext.audits.dpsgd import audit_dpsgd
from dptext.audits.form import audit_form_profile
from dptext.audits.kps import (
    audit_dpkps,
    audit_dpkps_defaults,
    audit_kde,
    audit_label_counts,
    audit_vocabulary,
)
from dptext.audits.kps_default import audit_dpkps_default
from dptext.audits.labels import audit_label_set
from dptext.audits.models import audit_histogram, audit_selection, audit_terms_per_doc
from dptext.audits.multilabel import audit_multilabel_histogram
from dptext.audits.pate import audit_pate, audit_pate_tutor
from dptext.audits.pate_default import audit_pate_default
from dptext.privacy.auditing import BROKEN_VARIANTS, AuditRow, audit_gaussian, audit_laplace

Sizer = Callable[[int], int]
Audit = Callable[[Sizer, float, str], AuditRow]

REGISTRY: dict[str, Audit] = {
    "laplace": lambda n, c, b: audit_laplace(samples=n(20_000), confidence=c, broken=b),
    "gaussian": lambda n, c, b: audit_gaussian(samples=n(20_000), confidence=c, broken=b),
    "vocabulary": lambda n, c, b: audit_vocabulary(runs=n(2000), confidence=c, broken=b),
    "vocabulary-gaussian": lambda n, c, b: audit_vocabulary(
        "gaussian", delta=1e-2, runs=n(2000), confidence=c, broken=b),
    "labels": lambda n, c, b: audit_label_counts(runs=n(3000), confidence=c, broken=b),
    "kde": lambda n, c, b: audit_kde(runs=n(12), confidence=c, broken=b),
    # Gaussian at δ = 1e-3 needs ~10,000 samples a side to see half the noise reliably
    "kde-gaussian": lambda n, c, b: audit_kde("gaussian", runs=n(40), confidence=c, broken=b),
    "dpkps": lambda n, c, b: audit_dpkps(runs=n(1500), confidence=c, broken=b),
    "dpkps-independent": lambda n, c, b: audit_dpkps_defaults(
        "independent", runs=n(1500), confidence=c, broken=b),
    "dpkps-iterative": lambda n, c, b: audit_dpkps_defaults(
        "iterative", runs=n(1500), confidence=c, broken=b),
    # the CLI's DP-KPS fit, its stages (label set, S, histogram) composed
    "dpkps-default": lambda n, c, b: audit_dpkps_default(runs=n(1000), confidence=c, broken=b),
    "form": lambda n, c, b: audit_form_profile(runs=n(10), confidence=c, broken=b),
    "histogram": lambda n, c, b: audit_histogram(runs=n(5000), confidence=c, broken=b),
    "multilabel-histogram": lambda n, c, b: audit_multilabel_histogram(
        runs=n(5000), confidence=c, broken=b),
    "selection": lambda n, c, b: audit_selection(runs=n(10_000), confidence=c, broken=b),
    "terms-per-doc": lambda n, c, b: audit_terms_per_doc(runs=n(10_000), confidence=c,
                                                         broken=b),
    # the label set's "unbounded" control: no threshold, so a label of one document shows
    "label-set": lambda n, c, b: audit_label_set(
        samples=n(20_000), confidence=c, broken={"unbounded": "no-threshold"}.get(b, b)),
    "augpe": lambda n, c, b: audit_augpe(runs=n(8), confidence=c, broken=b),
    "pate": lambda n, c, b: audit_pate(runs=n(3000), confidence=c, broken=b),
    "pate-tutor": lambda n, c, b: audit_pate_tutor(runs=n(3000), confidence=c, broken=b),
    "dpsgd": lambda n, c, b: audit_dpsgd(runs=n(3000), confidence=c, broken=b),
    # the CLI's runs without --labels (label set first) and dpft's real training loop
    "augpe-default": lambda n, c, b: audit_augpe_default(runs=n(10), confidence=c, broken=b),
    "pate-default": lambda n, c, b: audit_pate_default(runs=n(800), confidence=c, broken=b),
    "dpft-training": lambda n, c, b: audit_dpft_training(runs=n(800), confidence=c,
                                                         broken=b),
    "dpft-set-codes": lambda n, c, b: audit_dpft_set_codes(runs=n(6000), confidence=c,
                                                           broken=b),
}
AUDITS: tuple[str, ...] = tuple(REGISTRY)


def run_audits(which: Sequence[str] = AUDITS, *, scale: float = 1.0, broken: str = "none",
               confidence: float = 0.95,
               progress: Callable[[str], None] | None = None) -> list[AuditRow]:
    """Run the named audits; ``scale`` multiplies every sample count (``--runs``)."""
    unknown = sorted(set(which) - set(REGISTRY))
    if unknown:
        raise ValueError(f"unknown audits {unknown}; choose from {', '.join(AUDITS)}")
    if broken not in BROKEN_VARIANTS:
        raise ValueError(f"broken variant must be one of {', '.join(BROKEN_VARIANTS)}; "
                         f"got {broken!r}")
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"the run scale must be a positive number, got {scale!r}")

    def n(k: int) -> int:  # at least 20 samples, or one run of a many-sample audit
        return max(1 if k < 100 else 20, round(k * scale))

    rows = []
    for name in which:
        if progress:
            progress(name)
        rows.append(REGISTRY[name](n, confidence, broken))
    return rows
