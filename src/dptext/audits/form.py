"""Audit of DP-KPS's form profile (``generators.kps.form.release_form_profile``).

Every class holds the same few documents on D; D' adds to every class one canary document
whose form differs from theirs in every block it can (a long, listed, linked, hashtagged,
negative text). The classes hold disjoint documents, so each class's release is an
independent draw of the neighbouring pair (parallel composition: one class's ε is the
claim). The statistic is the class's noisy sum projected on the canary's form vector: the
Gaussian likelihood ratio. Controls: ``half-noise``; ``unbounded``: the canary counts twice
(its contribution is twice the stated √blocks).
"""

from __future__ import annotations

import time

import numpy as np

from dptext.audits.common import audit_claim, canary_copies
from dptext.privacy import NoiseSpec, PrivacyLedger
from dptext.privacy.auditing import AuditRow, broken_noise
from dptext.text.form import FORM_BLOCKS, form_vectors

BASE = ("A short plain note about the weather today.",
        "Another calm line on the same topic, nothing more.")
CANARY = ("Worst DISASTER ever: \"awful, terrible\" #fail @someone 20 mg?\n\n"
          + "\n".join(f"- item {i} is horrible and sad" for i in range(30))
          + "\n\nhttp://bbc.in/x1")


def audit_form_profile(epsilon: float = 2.0, delta: float = 1e-3, *, runs: int = 10,
                       classes: int = 1000, confidence: float = 0.95,
                       broken: str = "none") -> AuditRow:
    from dptext.generators.kps.form import release_form_profile

    started = time.perf_counter()
    copies = canary_copies(broken)
    spec = NoiseSpec("gaussian", epsilon, delta)
    base, canary = form_vectors(BASE).sum(axis=0), form_vectors([CANARY])[0]
    unit = canary / np.linalg.norm(canary)
    labels = list(range(classes))
    samples = []
    ledger = PrivacyLedger()
    with broken_noise(broken):
        for docs in (BASE, (*BASE, *[CANARY] * copies)):
            items = [(t, k) for k in labels for t in docs]
            draws: list[np.ndarray] = []
            for _ in range(runs):
                ledger = PrivacyLedger()
                profile = release_form_profile(items, labels, spec, ledger)
                draws.append((np.stack([profile.sums[k] for k in labels]) - base) @ unit)
            samples.append(np.concatenate(draws))
    return audit_claim(
        ledger, f"form profile (Gaussian, {len(FORM_BLOCKS)} one-hot blocks, {classes} classes)",
        [(samples[0], samples[1], "projection on the canary's form vector")],
        confidence=confidence, started=started, broken=broken)
