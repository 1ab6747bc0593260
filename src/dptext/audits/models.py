"""Audits of DP-KPS's default model releases: the class × term histogram, the private
model selection (report-noisy-max over validation scores) and the private choice of S.

* ``audit_histogram``: ``keyphrases.histogram.release_histogram`` on a small corpus D and on
  D' = D + one document of S terms; the statistic is the released matrix projected on
  the shift between the two exact count matrices. Its ``unbounded`` control ignores the
  label and counts every document in every class row (contribution √(S·classes), not
  the stated √S).
* ``audit_selection``: ``privacy.selection.select_noisy_max`` over candidates whose
  scores count correctly labelled validation documents, candidate 0 with DP-KPS's head
  start (``margin_scores``); D' adds one document that only candidate 0 labels right
  (its score moves by the whole stated sensitivity); the statistic is whether
  candidate 0 is chosen. Its
  ``unbounded`` control counts each document twice (the sensitivity stated as 1 is 2);
  its ``half-noise`` control draws the noise of 2ε and records ε.
* ``audit_terms_per_doc``: the private choice of S (``keyphrases.terms_per_doc``) on an empty
  corpus D and on D' = one document with more distinct terms than the largest
  candidate; the statistic is the chosen S. Controls as for the selection (``unbounded``: that
  document counts twice).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from dptext.audits.common import audit_claim, canary_copies, swapped
from dptext.keyphrases import histogram, terms_per_doc
from dptext.privacy import NoiseSpec, PrivacyLedger, selection
from dptext.privacy.auditing import AuditRow, broken_noise, observe_releases
from dptext.privacy.selection import SELECTION_MARGIN, margin_scores, select_noisy_max
from dptext.text.vocabulary import PublicVocabulary

S, CLASSES, TERMS = 3, 4, 8
LABELS = tuple(f"c{k}" for k in range(CLASSES))
PUBLIC = tuple(f"t{i}" for i in range(TERMS))


def _corpus() -> tuple[list[np.ndarray], np.ndarray]:
    rng = np.random.default_rng(0)
    firsts = [rng.choice(TERMS, S, replace=False) for _ in range(40)]
    return firsts, rng.integers(0, CLASSES, 40)


@contextmanager
def _counted_in_every_row(active: bool) -> Iterator[None]:
    """The ``unbounded`` control: the label is ignored and every document is counted in
    every class's row."""
    honest = histogram.class_term_counts
    if not active:
        yield
        return

    def every_row(firsts, class_ids, n_classes, n_terms):
        return sum(honest(firsts, np.full(len(firsts), k), n_classes, n_terms)
                   for k in range(n_classes))

    with swapped(histogram, "class_term_counts", every_row):
        yield


def audit_histogram(epsilon: float = 2.0, delta: float = 1e-3, *, runs: int = 5000,
                    confidence: float = 0.95, broken: str = "none") -> AuditRow:
    """The Gaussian class × term histogram (the default model's one release)."""
    canary_copies(broken)  # validates ``broken``
    started = time.perf_counter()
    firsts, ids = _corpus()
    planted = ([*firsts, np.array([0, 1, 2])], np.append(ids, 0))
    spec = NoiseSpec("gaussian", epsilon, delta)
    with _counted_in_every_row(broken == "unbounded"):
        exact = [histogram.class_term_counts(f, i, CLASSES, TERMS).toarray().ravel()
                 for f, i in ((firsts, ids), planted)]
        shift = exact[1] - exact[0]
        unit = shift / np.linalg.norm(shift)
        out = []
        ledger = PrivacyLedger()
        with broken_noise(broken):
            for f, i in ((firsts, ids), planted):
                with observe_releases() as seen:
                    for _ in range(runs):
                        ledger = PrivacyLedger()
                        histogram.release_histogram(f, i, LABELS, PUBLIC, spec, ledger,
                                                    terms_per_doc=S, false_cells=1.0,
                                                    max_terms=TERMS)
                noisy = np.stack([v.ravel() for _, _, v in seen])
                out.append((noisy - exact[0]) @ unit)
    return audit_claim(
        ledger, f"class × term histogram (Gaussian, S = {S}, {CLASSES} classes)",
        [(out[0], out[1], "projection on the shift of one document's counts")],
        confidence=confidence, started=started, broken=broken)


@contextmanager
def _half_noise_selection(active: bool) -> Iterator[None]:
    """The ``half-noise`` control of the selection: the noise of 2ε, recorded as ε."""
    honest = selection._noisy_max
    if not active:
        yield
        return

    def half(size, sensitivity, epsilon, monotonic):
        meas, scale, _ = honest(size, sensitivity, 2 * epsilon, monotonic)
        return meas, 2 * scale, epsilon

    with swapped(selection, "_noisy_max", half):
        yield


def audit_selection(epsilon: float = 1.0, candidates: int = 20, *, runs: int = 10_000,
                    confidence: float = 0.95, broken: str = "none") -> AuditRow:
    """Report-noisy-max over validation scores (the private model selection)."""
    weight = canary_copies(broken)  # unbounded: each document counts twice
    started = time.perf_counter()
    correct = np.random.default_rng(1).integers(0, 2, (300, candidates))
    correct[:, 1:] = correct[:, :1]  # D: every candidate labels the same documents right,
    # and the others as many more as candidate 0's head start is worth (about a tie)
    wrong = np.flatnonzero(correct[:, 0] == 0)
    wrong = wrong[:round(SELECTION_MARGIN * len(wrong))]
    correct[wrong, 1:] = 1
    planted = np.zeros((1, candidates), dtype=np.int64)
    planted[0, 0] = 1
    out = []
    ledger = PrivacyLedger()
    with _half_noise_selection(broken == "half-noise"):
        for docs in (correct, np.vstack([correct, planted])):
            scores, sensitivity = margin_scores(np.repeat(docs, weight, axis=0),
                                                SELECTION_MARGIN)
            ledger = PrivacyLedger()
            picks = [select_noisy_max(scores, sensitivity=sensitivity, epsilon=epsilon,
                                      ledger=ledger,
                                      name="model selection", reason="audit")
                     for _ in range(runs)]
            out.append((np.asarray(picks) == 0).astype(float))
    # one selection's claim
    return audit_claim(
        PrivacyLedger(releases=ledger.releases[:1]),
        f"model selection (report-noisy-max, {candidates} candidates)",
        [(out[0], out[1], "candidate 0 chosen")],
        confidence=confidence, started=started, broken=broken)


def audit_terms_per_doc(epsilon: float = 1.0, *, runs: int = 10_000, confidence: float = 0.95,
                        broken: str = "none") -> AuditRow:
    """The private choice of S (``keyphrases.terms_per_doc``), through the real extractor, scores
    and sensitivity, between the default grid's extremes (S = 2 or its largest): D has
    no document (a tie), D' one with more distinct public terms than the largest S —
    it adds 14 to S = 2's score and 89 (the stated sensitivity, at S = 80) to the
    largest S's, so the audit sees (89 − 14)/89 of ε. The statistic is the chosen S."""
    weight = canary_copies(broken)  # unbounded: the long document counts twice
    started = time.perf_counter()
    grid = (min(terms_per_doc.GRID), max(terms_per_doc.GRID))
    terms = tuple(f"w{i}" for i in range(grid[1] + 8))
    extractor = PublicVocabulary("audit", terms).extractor()
    out = []
    ledger = PrivacyLedger()
    with _half_noise_selection(broken == "half-noise"):
        for texts in ([], [" ".join(terms)] * weight):
            scores = terms_per_doc.TermCountScores(extractor, grid)(texts).tolist()
            ledger = PrivacyLedger()
            picks = [terms_per_doc.choose_terms_per_doc(scores, epsilon=epsilon, ledger=ledger,
                                                        grid=grid)
                     for _ in range(runs)]
            out.append(np.asarray(picks, dtype=float))
    # one choice's claim
    return audit_claim(
        PrivacyLedger(releases=ledger.releases[:1]),
        f"terms per document S (report-noisy-max, S = {grid[0]} or {grid[1]})",
        [(out[0], out[1], "the chosen S")],
        confidence=confidence, started=started, broken=broken)
