"""The private choice of S, the distinct terms one document may contribute
(``dptext.keyphrases.terms_per_doc``, ``KeyphraseSeeder(terms_per_doc="auto")``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dptext.corpus import Corpus
from dptext.generators.kps import KeyphraseSeeder
from dptext.generators.kps.options import PER_STAGE_TERMS_PER_DOC
from dptext.keyphrases.terms_per_doc import (
    GRID,
    RESOLUTION,
    TERMS_CHOICE_NAME,
    TermCountScores,
    choose_terms_per_doc,
    document_scores,
    score_sensitivity,
)
from dptext.privacy import PrivacyLedger, compose
from dptext.text.vocabulary import PublicVocabulary
from test_kps_models import TERMS, FakeEmbedder

WORDS = tuple(f"w{i}" for i in range(300))


def test_no_document_adds_more_than_the_stated_sensitivity():
    m = np.arange(0, 1000)
    scores = document_scores(m)
    assert scores.shape == (1000, len(GRID)) and scores.dtype == np.int64
    assert scores.min() == 0 and scores.max() == score_sensitivity()
    assert score_sensitivity() == math.floor(RESOLUTION * math.sqrt(max(GRID)))
    # a document's score never falls as it holds more terms (monotone in m)
    assert (np.diff(scores, axis=0) >= 0).all()


def test_scores_count_distinct_public_terms_capped_at_the_largest_candidate():
    extractor = PublicVocabulary("w", WORDS).extractor()
    texts = ["w1 w2 w2 w2 w3 unknown", " ".join(WORDS), ""]
    got = TermCountScores(extractor)(texts)
    assert got.tolist() == document_scores(np.array([3, max(GRID), 0])).sum(axis=0).tolist()
    assert TermCountScores(extractor)([]).tolist() == [0] * len(GRID)


@pytest.mark.parametrize(("words", "expected"), [(4, 4), (9, 8), (300, 80)])
def test_the_choice_maximises_kept_counts_over_the_noise(words, expected):
    """u(S) = Σ min(m, S)/√S peaks at S = m for documents of m terms each (ties to the
    grid), at the largest S for long documents."""
    extractor = PublicVocabulary("w", WORDS).extractor()
    texts = [" ".join(WORDS[i:i + words]) for i in range(200)]
    ledger = PrivacyLedger()
    scores = TermCountScores(extractor)(texts).tolist()
    picks = {choose_terms_per_doc(scores, epsilon=50.0, ledger=ledger) for _ in range(5)}
    assert picks == {expected}
    rec = ledger.releases[0]
    assert rec.name.startswith(TERMS_CHOICE_NAME) and rec.mechanism == "report-noisy-max"
    assert rec.sensitivity == score_sensitivity() and rec.epsilon <= 50.0
    assert "monotone" in rec.sensitivity_norm and rec.fold is None


def test_choose_refuses_scores_of_another_grid():
    with pytest.raises(ValueError, match="candidates"):
        choose_terms_per_doc([1, 2], epsilon=1.0, ledger=PrivacyLedger())


def _corpus(words: int, n: int = 120) -> Corpus:
    rng = np.random.default_rng(0)
    texts, labels = [], []
    for label, pool in (("fruit", TERMS[:6]), ("sport", TERMS[6:])):
        for _ in range(n):
            texts.append(" ".join(rng.choice(pool, words)))
            labels.append(label)
    return Corpus(texts=tuple(texts), labels=tuple(labels))


def _seeder(**kw) -> KeyphraseSeeder:
    base = dict(vocab=PublicVocabulary("toy", TERMS), embedder=FakeEmbedder(), epsilon=8.0,
                length=3, features=64, vocab_size=len(TERMS), histogram_terms=len(TERMS),
                selection_sequences=50, labels=("fruit", "sport"))
    return KeyphraseSeeder(**{**base, **kw})


def test_auto_is_the_default_and_its_release_is_planned_and_in_the_ledger():
    assert KeyphraseSeeder().terms_per_doc == "auto"
    seeder = _seeder()
    planned = seeder.planned_releases()
    assert sum(r.name == TERMS_CHOICE_NAME for r in planned) == 1
    seeder.fit(_corpus(words=2), rng=np.random.default_rng(0))
    chosen = [r for r in seeder.ledger_.releases if r.name.startswith(TERMS_CHOICE_NAME)]
    assert len(chosen) == 1 and seeder.terms_per_doc_ in GRID
    # each short document holds two distinct terms: the choice is small (it is noisy: ε·5%)
    assert seeder.terms_per_doc_ <= 12
    # the histogram's sensitivity is the chosen S's
    hist = next(r for r in seeder.ledger_.releases if r.name.startswith("class × term"))
    assert hist.sensitivity == pytest.approx(math.sqrt(seeder.terms_per_doc_))
    assert compose(seeder.ledger_.releases).epsilon <= 8.0 + 1e-9
    assert 7.99 < compose(planned).epsilon <= 8.0 + 1e-9
    assert any(line.startswith(f"terms per document: S = {seeder.terms_per_doc_}")
               for line in seeder.summary_lines())


def test_a_given_s_makes_no_release_and_takes_no_share():
    seeder = _seeder(terms_per_doc=4)
    assert not any(r.name == TERMS_CHOICE_NAME for r in seeder.planned_releases())
    seeder.fit(_corpus(words=2), rng=np.random.default_rng(0))
    assert seeder.terms_per_doc_ == 4
    assert not any(r.name.startswith(TERMS_CHOICE_NAME) for r in seeder.ledger_.releases)
    assert not any(line.startswith("terms per document") for line in seeder.summary_lines())


def test_per_stage_budgets_keep_each_stage_exactly_its_own_epsilon():
    """The paper's interface: no share of a total ε to choose S from, so S = 80."""
    seeder = _seeder(epsilon=None, epsilon_vocab=1.0, epsilon_kde=5.0, model="kde",
                     select="none", vocab_noise="laplace")
    assert not any(r.name == TERMS_CHOICE_NAME for r in seeder.planned_releases())
    seeder.fit(_corpus(words=2), rng=np.random.default_rng(0))
    assert seeder.terms_per_doc_ == PER_STAGE_TERMS_PER_DOC
    assert seeder.ledger_.guarantee().epsilon == pytest.approx(6.0)
    vocab = next(r for r in seeder.ledger_.releases if r.name.startswith("vocabulary"))
    assert vocab.sensitivity == PER_STAGE_TERMS_PER_DOC  # Laplace: L1 = S


@pytest.mark.parametrize("bad", ["many", 0, -3, 2.5, True])
def test_bad_terms_per_doc_is_refused(bad):
    with pytest.raises(ValueError, match="terms_per_doc"):
        _seeder(terms_per_doc=bad).planned_releases()


def test_bad_terms_share_is_refused():
    with pytest.raises(ValueError, match="terms_share"):
        _seeder(terms_share=1.0).planned_releases()
