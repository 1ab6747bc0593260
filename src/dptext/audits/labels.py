"""The audit of the DP label set (``privacy.labels``): the partition selection made when
labels are not declared. Its negative controls are its own: ``half-noise`` (half the σ,
the full one claimed) and ``no-threshold`` (every label with a positive noisy count is
released, so a label of one document may be)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import numpy as np

from dptext.audits.common import audit_claim, swapped
from dptext.privacy import PrivacyLedger
from dptext.privacy.auditing import AuditRow

LABEL_SET_BROKEN = ("none", "half-noise", "no-threshold")


@contextmanager
def _broken_label_set(variant: str) -> Iterator[None]:
    """The label set's negative controls: ``half-noise`` (half the σ, the full one claimed)
    and ``no-threshold`` (every label whose noisy count is positive is released)."""
    from dptext.privacy import labels as mod

    if variant not in LABEL_SET_BROKEN:
        raise ValueError(f"broken variant must be one of {', '.join(LABEL_SET_BROKEN)}; "
                         f"got {variant!r}")
    if variant == "none":
        yield
        return
    honest = mod._threshold_measurement

    def broken(kind, k, epsilon, delta, threshold_delta):
        cal = honest(kind, k, epsilon, delta, threshold_delta)
        scale, threshold = (cal.scale / 2, cal.threshold) if variant == "half-noise" \
            else (cal.scale, 0.0)
        return replace(cal, measurement=mod._make(kind, scale, threshold))

    with swapped(mod, "_threshold_measurement", broken):
        yield


def audit_label_set(epsilon: float = 4.0, delta: float = 1e-3, *, samples: int = 20_000,
                    count: int = 20, confidence: float = 0.95,
                    broken: str = "none") -> AuditRow:
    """The DP label set (Gaussian, as with the defaults), two neighbouring pairs:

    * a label of ``count`` documents against ``count`` + 1 (always released): its
      noisy count, the noise's likelihood ratio — catches too little noise;
    * a label absent against one held by a single document: its noisy count if it is
      released, 0 if not — catches a missing or too low threshold.

    Labels are independent partitions of one release, so one release of 2·``samples``
    labels gives ``samples`` draws of each side (as ``auditing._shifted_release``).
    The claim is the ledger's: the noise's (ε, δ) plus the threshold's δ."""
    from dptext.privacy.labels import release_label_set, standalone_spec

    started = time.perf_counter()
    spec = standalone_spec("gaussian", epsilon, delta)
    names = [f"c{i}" for i in range(samples)]
    d = [lab for lab in names for _ in range(count)]
    ones = [f"one{i}" for i in range(samples)]
    d_prime = [*d, *names, *ones]  # every label one document more, and labels of one
    ledger = PrivacyLedger()
    with _broken_label_set(broken):
        out_d = release_label_set(d, spec, ledger=ledger).counts["label"]
        out_p = release_label_set(d_prime, spec, ledger=ledger).counts["label"]
    low = np.array([out_d.get(x, 0.0) for x in names])  # `count` documents
    high = np.array([out_p.get(x, 0.0) for x in names])  # `count` + 1
    absent = np.array([out_d.get(x, 0.0) for x in ones])  # never in D
    once = np.array([out_p.get(x, 0.0) for x in ones])  # one document in D'
    # one release's claim
    return audit_claim(
        PrivacyLedger(releases=ledger.releases[:1]), "DP label set (Gaussian partition selection)",
        [(low, high, f"noisy count of a label of {count} vs {count} + 1 documents"),
         (absent, once, "a label of one document: its noisy count if released, else 0")],
        confidence=confidence, started=started, broken=broken)
