"""The audit of PATE as ``dptext pate`` runs it without ``--labels``.

``audit_pate_default`` makes, in every run, the releases of ``PateGenerator.fit`` in a run
folder as the engine does: its step 1 (``_first_releases``: the DP label set, then the
tutor's histogram of the released classes and DP-KPS's vocabulary, the ledger saved and
``released.json`` written before use) and GNMax (``gnmax``) at the vote noise that step
planned; the claim is the run's ledger. What is not redone in every run: the candidate
pool (public; the row fixes one) and the teachers' training, whose exact votes are
deterministic for a fixed shard key, so the auditor computes them once per neighbour
(``pate._setup``: the run's secret salt is replaced by the auditor's, which puts the
adversary in a shard of its own on the queried candidate — the worst case the salt only
makes unlikely). 100 teachers (the default) on 60 documents of two classes, so that both
labels clear the label set's threshold.

D' adds one adversarial document of class "0" made of S = 80 public terms no document of
D holds: it moves the label set's count of "0", the tutor's count of "0", S cells of the
vocabulary histogram (its √S) and its teacher's vote (√2 per query). The statistic is the
Gaussian likelihood ratio of those four releases (σ from the run's ledger).
``half-noise`` halves every stage's noise; ``unbounded`` adds the document twice (counted
twice, training two teachers).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from dptext.audits.common import (
    RatioSamples,
    canary_copies,
    gaussian_llr,
    noise_scales,
)
from dptext.audits.labels import _broken_label_set
from dptext.audits.pate import _setup
from dptext.privacy.auditing import AuditRow, broken_noise, observe_releases
from dptext.privacy.labels import LABEL_SET

DOCS, TEACHERS = 60, 100
VOCABULARY = "english:500"  # the public vocabulary (`--vocab`); noise on 20,000 words: 1 s a run
TUTOR = "label histogram"  # the tutor's (its release's name without the detail)


def pate_default_ratios(epsilon: float = 3.0, delta: float = 0.2, *, runs: int = 800,
                        broken: str = "none") -> RatioSamples:
    """PATE's releases as its fit makes them (undeclared labels) on D and D' (above),
    ``runs`` runs a side: each run's likelihood ratio."""
    from dptext.generators.pate.generator import PateConfig, PateGenerator

    copies = canary_copies(broken)
    words, term_shift = _adversary_terms()
    d_exact, nb_exact, (texts, labels, adversary) = _setup(copies, DOCS, TEACHERS, words)
    honest_nb = _setup(1, DOCS, TEACHERS, words)[1] if broken == "unbounded" else nb_exact
    vote_shift = honest_nb[1] - d_exact[1]  # one document's move of the votes
    gen = PateGenerator(PateConfig(epsilon=epsilon, delta=delta, teachers=TEACHERS,
                                   vocab=VOCABULARY))
    corpora = {"D": (texts, labels, d_exact[1]),
               "D'": ([*texts, *adversary], [*labels, *["0"] * copies], nb_exact[1])}
    samples: dict[str, list[float]] = {"D": [], "D'": []}
    ledger = None
    half = "half-noise" if broken == "half-noise" else "none"
    with broken_noise(half), _broken_label_set(half), \
            tempfile.TemporaryDirectory() as tmp:
        for name, (docs, labs, votes) in corpora.items():
            for run in range(runs):
                with observe_releases() as seen:
                    step, ledger = _releases(gen, docs, labs, votes, Path(tmp) / f"{name}{run}")
                (vocab,) = [v for n, _, v in seen if n.startswith("vocabulary histogram")]
                samples[name].append(_likelihood_ratio(step, ledger, d_exact[1], vote_shift,
                                                       DOCS // 2) +
                                     _vocabulary_ratio(vocab, term_shift, ledger))
    sigma = noise_scales(ledger)
    shift = (float(np.sum(vote_shift**2)) / sigma["GNMax teacher votes"]**2
             + 1 / sigma[LABEL_SET]**2 + 1 / sigma[TUTOR]**2
             + float(term_shift.sum()) / sigma["vocabulary histogram"]**2)
    return RatioSamples(np.array(samples["D"]), np.array(samples["D'"]), ledger, shift)


def audit_pate_default(epsilon: float = 3.0, delta: float = 0.2, *, runs: int = 800,
                       confidence: float = 0.95, broken: str = "none") -> AuditRow:
    """The DP test of ``pate_default_ratios`` against the run ledger's (ε, δ)."""
    started = time.perf_counter()
    return pate_default_ratios(epsilon, delta, runs=runs, broken=broken).audit(
        "PATE as the CLI runs it (undeclared labels: label set + tutor + "
        "vocabulary + GNMax votes, PateGenerator's releases)",
        "likelihood ratio of the label set's and the tutor's count of the adversary's "
        "class, its S vocabulary cells and the teachers' votes",
        confidence=confidence, started=started, broken=broken)


def _adversary_terms() -> tuple[str, np.ndarray]:
    """S = ``terms_per_doc`` (80) public terms no document of D holds, and the cells of the
    vocabulary histogram they move (its stated sensitivity √S)."""
    from dptext.generators.pate.generator import PateConfig
    from dptext.text.extract import FirstTermCounts
    from dptext.text.vocabulary import load_vocabulary

    vocab, s = load_vocabulary(VOCABULARY), PateConfig(epsilon=1.0).terms_per_doc
    words = " ".join(vocab.terms[-s:])
    shift = FirstTermCounts(vocab.extractor(), s)([words]).astype(np.float64)
    if shift.sum() != s:  # pragma: no cover - a vocabulary change, not a broken mechanism
        raise RuntimeError(f"the adversary's text holds {shift.sum():g} of its {s} terms")
    return words, shift


def _vocabulary_ratio(noisy: np.ndarray, shift: np.ndarray, ledger) -> float:
    """The vocabulary histogram's likelihood ratio along the adversary's S cells (the
    noisy values of D's exact counts, 0 there, need no subtraction)."""
    return gaussian_llr([noisy], [shift], [noise_scales(ledger)["vocabulary histogram"]])


def _releases(gen, texts: list[str], labels: list[str], votes: np.ndarray, folder: Path):
    """One run's releases, as ``PateGenerator.fit`` makes them (step 1, then GNMax)."""
    from dptext.generators.base import RunContext
    from dptext.generators.pate.teachers import gnmax
    from dptext.privacy import NoiseSpec, PrivacyLedger

    folder.mkdir()
    ctx = RunContext(dir=folder, ledger=PrivacyLedger(), save_ledger=lambda: None,
                     progress=False)
    step = gen._first_releases(texts, labels, True, ctx)
    step["noisy_votes"] = gnmax(votes, NoiseSpec(**step["noise"]["votes"]), ctx.ledger)
    return step, ctx.ledger


def _likelihood_ratio(step: dict, ledger, votes_d: np.ndarray, vote_shift: np.ndarray,
                      count_d: float) -> float:
    """From released values only: the label set's and tutor's counts of class "0" (when
    released) and the noisy votes."""
    from dptext.generators.pate.teachers import VOTES_RELEASE

    sigma = noise_scales(ledger)
    released = step["released"]
    counts = released["label_set"]["counts"]["label"]
    noisy, shifts, sigmas = [step["noisy_votes"] - votes_d], [vote_shift], [sigma[VOTES_RELEASE]]
    if "0" in counts:
        noisy.append(np.array([counts["0"] - count_d]))
        shifts.append(np.ones(1))
        sigmas.append(sigma[LABEL_SET])
    if released["tutor"] is not None:
        classes = sorted(counts)
        noisy.append(np.array([released["tutor"][classes.index("0")] - count_d]))
        shifts.append(np.ones(1))
        sigmas.append(sigma[TUTOR])
    return gaussian_llr(noisy, shifts, sigmas)
