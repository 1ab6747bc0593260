"""Statistical tests of the keyphrase-model releases on neighbouring inputs.

Each test runs the real release path many times on a corpus D and on its neighbour
D' (D plus one document), reduces each output to the statistic an auditor would use
(the projection on the shift between the two exact statistics, or the indicator of
a choice), and asks ``epsilon_lower_bound`` what ε the samples prove. The honest
mechanism must stay within its claim; a broken variant — one document counted in
every class row, half the noise, a selection whose sensitivity is under-stated —
must be caught by the same audit.
"""

from __future__ import annotations

import numpy as np
import pytest

from dptext.kde import histogram
from dptext.privacy import NoiseSpec, PrivacyLedger
from dptext.privacy.audit import epsilon_lower_bound
from dptext.privacy.auditing import broken_noise, observe_releases
from dptext.privacy.selection import select_noisy_max

N = 5_000  # each sample is one run of the release path (a few ms)
EPS, DELTA = 2.0, 1e-3  # where 5k samples prove ≈ 1 for the honest release, ≈ 2.4 at twice μ
S, CLASSES, TERMS = 3, 4, 8
LABELS = tuple(f"c{k}" for k in range(CLASSES))
PUBLIC = tuple(f"t{i}" for i in range(TERMS))


def _corpus() -> tuple[list[np.ndarray], np.ndarray]:
    rng = np.random.default_rng(0)
    firsts = [rng.choice(TERMS, S, replace=False) for _ in range(40)]
    return firsts, rng.integers(0, CLASSES, 40)


def _counted_in_every_row(firsts, class_ids, n_classes, n_terms):
    """Broken: the label is ignored and every document is counted in every class's row."""
    honest = histogram.class_term_counts.__wrapped__
    return sum(honest(firsts, np.full(len(firsts), k), n_classes, n_terms)
               for k in range(n_classes))


def _histogram_samples(runs: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Projections of the released matrix on the D → D' shift, under D and under D'."""
    firsts, ids = _corpus()
    planted = ([*firsts, np.array([0, 1, 2])], np.append(ids, 0))
    exact = [histogram.class_term_counts(f, i, CLASSES, TERMS).toarray().ravel()
             for f, i in ((firsts, ids), planted)]
    shift = exact[1] - exact[0]
    unit = shift / np.linalg.norm(shift)
    out = []
    for f, i in ((firsts, ids), planted):
        with observe_releases() as seen:
            for _ in range(runs):
                histogram.release_histogram(f, i, LABELS, PUBLIC,
                                            NoiseSpec("gaussian", EPS, DELTA), PrivacyLedger(),
                                            terms_per_doc=S, false_cells=1.0, max_terms=TERMS)
        noisy = np.stack([v.ravel() for _, _, v in seen])
        out.append((noisy - exact[0]) @ unit)
    return out[0], out[1], float(np.linalg.norm(shift))


@pytest.fixture
def wrap_counts(monkeypatch):
    """Expose the honest count function to the broken variant (as ``__wrapped__``)."""
    honest = histogram.class_term_counts

    def install(replacement=None):
        replacement = replacement or honest
        replacement.__wrapped__ = honest
        monkeypatch.setattr(histogram, "class_term_counts", replacement)

    return install


@pytest.mark.statistical
def test_histogram_release_within_claim():
    a, b, norm = _histogram_samples(N)
    assert norm == pytest.approx(np.sqrt(S))  # one document: S cells, one row
    audit = epsilon_lower_bound(a, b, delta=DELTA)
    assert audit.epsilon_lower_bound <= EPS
    assert audit.epsilon_lower_bound > 0.5  # the audit has power


@pytest.mark.statistical
def test_histogram_audit_catches_a_document_counted_in_every_row(wrap_counts):
    wrap_counts(_counted_in_every_row)
    a, b, norm = _histogram_samples(N)
    assert norm == pytest.approx(np.sqrt(S * CLASSES))
    assert epsilon_lower_bound(a, b, delta=DELTA).epsilon_lower_bound > EPS


@pytest.mark.statistical
def test_histogram_audit_catches_half_noise():
    with broken_noise("half-noise"):
        a, b, _ = _histogram_samples(N)
    assert epsilon_lower_bound(a, b, delta=DELTA).epsilon_lower_bound > EPS


# ---------------------------------------------------------------------------- selection
SEL_EPS, CANDIDATES = 1.0, 20


def _selection_samples(runs: int, weight: int) -> tuple[np.ndarray, np.ndarray]:
    """Indicator of choosing candidate 0, on D (all candidates equal) and on D' (one more
    validation document that only candidate 0 labels right). ``weight`` is how many
    times the scorer counts a document: 1 is honest; 2 under-states the sensitivity."""
    correct = np.random.default_rng(1).integers(0, 2, (300, CANDIDATES))
    correct[:, 1:] = correct[:, :1]  # D: every candidate labels the same documents right
    planted = np.zeros((1, CANDIDATES), dtype=np.int64)
    planted[0, 0] = 1
    out = []
    for docs in (correct, np.vstack([correct, planted])):
        scores = (weight * docs.sum(axis=0)).tolist()
        ledger = PrivacyLedger()
        picks = [select_noisy_max(scores, sensitivity=1, epsilon=SEL_EPS, ledger=ledger,
                                  name="model selection", reason="audit")
                 for _ in range(runs)]
        out.append((np.asarray(picks) == 0).astype(float))
    return out[0], out[1]


@pytest.mark.statistical
def test_selection_within_claim():
    a, b = _selection_samples(2 * N, weight=1)
    audit = epsilon_lower_bound(a, b)
    assert audit.epsilon_lower_bound <= SEL_EPS
    assert audit.epsilon_lower_bound > 0.4 * SEL_EPS


@pytest.mark.statistical
def test_selection_audit_catches_understated_sensitivity():
    a, b = _selection_samples(2 * N, weight=2)
    assert epsilon_lower_bound(a, b).epsilon_lower_bound > SEL_EPS
