"""The audit of DP-KPS as ``dptext generate`` and ``dptext keyphrases`` run it by default.

``audit_dpkps_default``: the seeder's parameters come from ``KPSGenerator.seeder_params``
(the CLI's: a total ε, undeclared labels, ``model="auto"``, ``select="auto"``,
``terms_per_doc="auto"``) and the fit is ``fit_seeder`` into a run ledger, as the engine
calls it: the DP label set, the private choice of S, the class × term histogram and the
form profile (``form="auto"``: released for the selection, here unused), composed by the
run's ledger. What differs from a CLI run, and why:

* the public vocabulary is small and made up (the default's 20,000 words make one fit
  ~1 s), with ``vocab_size`` its size (the default 1,000 would exceed it);
* D has one class, so the private model selection finds nothing to choose and makes no
  release (its share of ε stays unspent and out of the claim, which only tightens it):
  its scoring trains a classifier per candidate, 90 % of a two-class fit's time, and
  the audit needs ~2,000 fits per variant. The selection has its own row (``selection``).

D' adds one adversarial document of class "a" holding more distinct vocabulary terms than
the largest S, found in no other document. Whatever S is chosen, its first S terms move
S cells of the released histogram by one — the whole stated sensitivity √S — and it
moves the label set's noisy count of "a" by one. The statistic is the Gaussian likelihood
ratio of those two releases (``gaussian_llr``; S read from the run's released choice, σ
from its ledger): the optimal test of the stages that carry nearly all the budget,
against the ε the ledger composes over all of them (the form profile's share included: a claim
that only errs on the safe side). It runs at ε = 1, δ = 0.2: the
calibration and composition code is the same at every (ε, δ), and the tests need fewer
fits at a large δ (at δ = 0.1 and 800 fits a side, half the noise was caught in 2 of 3
runs). The ``half-noise`` control halves every stage's noise
(mechanisms, label set, report-noisy-max); ``unbounded`` puts the adversarial document in
D' twice.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import numpy as np

from dptext.audits.common import (
    RatioSamples,
    canary_copies,
    gaussian_llr,
    memoised_calibration,
    noise_scales,
    quiet,
    terms,
)
from dptext.audits.labels import _broken_label_set
from dptext.audits.models import _half_noise_selection
from dptext.corpus import Corpus
from dptext.keyphrases.histogram import HISTOGRAM_NAME
from dptext.keyphrases.terms_per_doc import GRID
from dptext.privacy import PrivacyLedger
from dptext.privacy.auditing import AuditRow, broken_noise, observe_releases
from dptext.privacy.labels import LABEL_SET
from dptext.text.vocabulary import PublicVocabulary

VOCABULARY = 200  # made-up public terms; the adversary holds the last max(GRID) of them
CORPUS = 60  # documents of D, all of class "a"


@contextmanager
def _broken_run(broken: str) -> Iterator[None]:
    """``half-noise``: every stage of the run adds half its noise and claims the full ε."""
    half = broken == "half-noise"
    with ExitStack() as stack:
        stack.enter_context(broken_noise("half-noise" if half else "none"))
        stack.enter_context(_broken_label_set("half-noise" if half else "none"))
        stack.enter_context(_half_noise_selection(half))
        yield


def _corpora(broken: str) -> tuple[PublicVocabulary, Corpus, Corpus, tuple[str, ...]]:
    vocab = PublicVocabulary("audit", terms(VOCABULARY))
    adversary = vocab.terms[-max(GRID):]  # more distinct terms than the largest S
    rng = np.random.default_rng(2)
    texts, labels = [], []
    for _ in range(CORPUS):
        texts.append(" ".join(rng.choice(vocab.terms[:60], 5, replace=False)))
        labels.append("a")
    copies = canary_copies(broken)
    d = Corpus(tuple(texts), tuple(labels))
    d_prime = Corpus((*texts, *[" ".join(adversary)] * copies), (*labels, *["a"] * copies))
    return vocab, d, d_prime, adversary


def dpkps_default_ratios(epsilon: float = 1.0, delta: float = 0.2, *, runs: int = 1000,
                         broken: str = "none") -> RatioSamples:
    """The CLI's DP-KPS fit (label set, S, histogram) on D and D' (above), ``runs`` fits a
    side: each fit's likelihood ratio. Its shift S/σ_S² + 1/σ_count² is the same for every
    S, the histogram's σ_S being calibrated to its sensitivity √S."""
    from dptext.generators.kps import KeyphraseSeeder
    from dptext.generators.kps.generator import KPSGenerator, fit_seeder

    vocab, d, d_prime, adversary = _corpora(broken)
    params = KPSGenerator(epsilon=epsilon, delta=delta,
                          seeder={"vocab": vocab, "vocab_size": len(vocab)}).seeder_params()
    adv_index = np.array([vocab.terms.index(t) for t in adversary])
    stat: dict[str, list[float]] = {"D": [], "D'": []}
    ledger, seeder = PrivacyLedger(), None
    with _broken_run(broken), quiet(), memoised_calibration():
        for name, corpus in (("D", d), ("D'", d_prime)):
            for run in range(runs):
                ledger = PrivacyLedger()
                seeder = KeyphraseSeeder(**params)
                with observe_releases() as seen:
                    fit_seeder(seeder, corpus, seed=run, say=lambda _: None, ledger=ledger)
                stat[name].append(_likelihood_ratio(seeder, ledger, seen, adv_index))
    sigma = noise_scales(ledger)
    shift = seeder.terms_per_doc_ / sigma[HISTOGRAM_NAME]**2 + 1 / sigma[LABEL_SET]**2
    return RatioSamples(np.array(stat["D"]), np.array(stat["D'"]), ledger, shift)


def audit_dpkps_default(epsilon: float = 1.0, delta: float = 0.2, *, runs: int = 1000,
                        confidence: float = 0.95, broken: str = "none") -> AuditRow:
    """The DP test of ``dpkps_default_ratios`` against the run ledger's (ε, δ)."""
    started = time.perf_counter()
    return dpkps_default_ratios(epsilon, delta, runs=runs, broken=broken).audit(
        "DP-KPS as the CLI runs it (undeclared labels, model and S auto: label set + "
        "S + class × term histogram)",
        "likelihood ratio of the histogram cells of the adversary's first S terms and "
        "the label set's count of its class",
        confidence=confidence, started=started, broken=broken)


def _likelihood_ratio(seeder, ledger: PrivacyLedger, seen, adv_index: np.ndarray) -> float:
    """From released values only: the run's S, its label set, the noisy histogram."""
    sigma = noise_scales(ledger)
    labels = list(seeder.label_set_.values["label"])
    if "a" not in labels:  # class "a" not released: no cell of it, no count
        return 0.0
    (noisy,) = [v for name, _, v in seen if name.startswith(HISTOGRAM_NAME)]
    row = noisy.reshape(len(labels), -1)[labels.index("a")]
    cells = adv_index[:seeder.terms_per_doc_]
    count = seeder.label_set_.counts["label"]["a"]
    return gaussian_llr([row[cells], np.array([count])],
                        [np.ones(len(cells)), np.ones(1)],
                        [sigma[HISTOGRAM_NAME], sigma[LABEL_SET]])
