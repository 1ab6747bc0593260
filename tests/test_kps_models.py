"""Keyphrase models (histogram, KDE, hybrid), the private selection, and the fold ledger."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dptext.corpus import Corpus
from dptext.generators.kps import KeyphraseSeeder
from dptext.generators.kps.form import FORM_NAME
from dptext.generators.kps.models import (
    HistogramModel,
    KeyphraseModel,
    MixtureModel,
    SmoothedHistogramModel,
    describe,
    neighbour_kernel,
)
from dptext.generators.kps.selection import candidate_correct, embedded, presence_matrix
from dptext.kde.sampler import SamplingStats
from dptext.keyphrases.histogram import (
    ReleasedHistogram,
    class_term_counts,
    histogram_sensitivity,
    release_histogram,
)
from dptext.privacy import NoiseSpec, PrivacyLedger, Release, compose
from dptext.privacy.selection import fold_of, margin_scores, select_noisy_max
from dptext.text.vocabulary import PublicVocabulary

TERMS = ("apple", "banana", "cherry", "grape", "lemon", "mango", "goal", "match", "team",
         "coach", "score", "league")


class FakeEmbedder:
    """Deterministic public-term embeddings (no model download in unit tests)."""

    def encode(self, texts):
        rng = np.random.default_rng(abs(hash(tuple(texts))) % 2**32)
        x = rng.standard_normal((len(texts), 16)).astype(np.float32)
        return x / np.linalg.norm(x, axis=1, keepdims=True)


def _corpus(n_per_class: int = 150, seed: int = 0) -> Corpus:
    rng = np.random.default_rng(seed)
    fruit, sport = TERMS[:6], TERMS[6:]
    texts, labels = [], []
    for label, words in (("fruit", fruit), ("sport", sport)):
        for _ in range(n_per_class):
            texts.append(" ".join(rng.choice(words, 5)) + f" doc{rng.integers(10**9)}")
            labels.append(label)
    return Corpus(texts=tuple(texts), labels=tuple(labels))


def _seeder(**kw) -> KeyphraseSeeder:
    base = dict(vocab=PublicVocabulary("toy", TERMS), embedder=FakeEmbedder(), epsilon=8.0,
                terms_per_doc=4, length=3, features=64, vocab_size=len(TERMS),
                histogram_terms=len(TERMS), selection_sequences=50,
                labels=("fruit", "sport"))  # declared: these tests are about the models
    return KeyphraseSeeder(**{**base, **kw})


def test_class_term_counts_one_row_per_document_first_terms_only():
    firsts = [np.array([0, 3]), np.array([1]), np.array([], dtype=np.int64), np.array([3, 2])]
    m = class_term_counts(firsts, np.array([0, 1, 1, -1]), 2, 5).toarray()
    assert m.tolist() == [[1, 0, 0, 1, 0], [0, 1, 0, 0, 0]]  # class −1 is dropped
    sens = histogram_sensitivity(4)
    assert sens.l1 == 4 and sens.l2 == pytest.approx(2.0)


def test_release_histogram_keeps_only_cells_above_the_floor():
    firsts = [np.array([0, 1])] * 400 + [np.array([2])] * 400
    ledger = PrivacyLedger()
    hist = release_histogram(firsts, np.array([0] * 400 + [1] * 400), ["a", "b"],
                             ("x", "y", "z", "w"), NoiseSpec("gaussian", 2.0, 1e-5), ledger,
                             terms_per_doc=2, false_cells=1e-3, max_terms=10)
    assert set(hist.terms) == {"x", "y", "z"}  # "w" (count 0) stays below the floor
    assert (hist.counts[hist.counts != 0] > hist.floor).all()
    assert len(ledger.releases) == 1 and ledger.releases[0].sensitivity == pytest.approx(
        math.sqrt(2))
    assert hist.weights("b")[hist.terms.index("z")] > 0 == hist.weights("b")[
        hist.terms.index("x")]
    with pytest.raises(ValueError, match="terms_per_doc"):
        release_histogram([np.array([0, 1, 2])], np.array([0]), ["a"], ("x", "y", "z"),
                          NoiseSpec("gaussian", 2.0, 1e-5), ledger, terms_per_doc=2,
                          false_cells=1.0, max_terms=10)


def test_higher_floors_and_purity_powers_are_post_processing_of_one_release():
    """Cells kept at a low floor (100 expected false cells) can be cut at a higher one
    (10) afterwards, not lowered; power 0 weighs by class frequency alone."""
    firsts = [np.array([0, 1])] * 60 + [np.array([2])] * 20 + [np.array([3])] * 6
    ledger = PrivacyLedger()
    hist = release_histogram(firsts, np.array([0] * 60 + [1] * 26), ["a", "b"],
                             ("x", "y", "z", "w"), NoiseSpec("gaussian", 4.0, 1e-5), ledger,
                             terms_per_doc=2, false_cells=100.0, max_terms=10)
    assert hist.false_cells == 100.0 and hist.cells == 8
    high = hist.kept(1e-3)  # the floor of 0.001 expected false cells among 8
    assert np.all((high == 0) | (high == hist.counts))  # cells are kept or cut, not changed
    assert np.count_nonzero(high) <= np.count_nonzero(hist.counts)
    assert high[high != 0].min(initial=np.inf) > hist.floor
    assert np.array_equal(hist.kept(), hist.counts)
    with pytest.raises(ValueError, match="below the released"):
        hist.kept(1000.0)
    a0 = HistogramModel(hist, power=0.0).weights("a")
    assert np.allclose(a0, np.maximum(hist.counts[0], 0))
    cut = HistogramModel(hist, power=1.0, false_cells=1e-3)
    assert not (cut.weights("b") > 0).sum() > (HistogramModel(hist).weights("b") > 0).sum()
    assert "floor at 0.001 false cells" in describe(cut)


def test_total_sequences_follow_the_released_class_counts():
    """``sample(total=N)`` splits N by the DP label set's noisy counts (released), not
    equally, when no label histogram was asked for."""
    texts = tuple(f"apple banana doc{i}" for i in range(300)) + \
        tuple(f"goal match doc{i}" for i in range(60))
    corpus = Corpus(texts=texts, labels=("fruit",) * 300 + ("sport",) * 60)
    seeder = _seeder(labels=None, epsilon=20.0).fit(corpus, rng=np.random.default_rng(0))
    counts = seeder.released_class_counts()
    sizes = seeder.class_sizes(total=120)
    assert sum(sizes.values()) == 120 and sizes["fruit"] > 3 * sizes["sport"]
    assert sizes["fruit"] == pytest.approx(120 * counts["fruit"] / sum(counts.values()), abs=1)


def test_histogram_weights_favour_frequent_and_specific_terms():
    hist = ReleasedHistogram(labels=("a", "b"), terms=("common", "specific", "rare"),
                             counts=np.array([[100.0, 50.0, 5.0], [100.0, 0.0, 0.0]]),
                             row_sums=np.zeros(2), floor=1.0, noise_scale=1.0)
    w = hist.weights("a")  # c·c/Σc: 50, 50, 5
    assert w.tolist() == [50.0, 50.0, 5.0]
    assert hist.weights("b").tolist() == [50.0, 0.0, 0.0]
    model = HistogramModel(hist)
    assert isinstance(model, KeyphraseModel)
    pos = model.sample("b", 4, 3, np.random.default_rng(0), SamplingStats())
    # only one term has weight: the sequences are that term and padding, not noise terms
    assert (pos[:, 0] == 0).all() and (pos[:, 1:] == -1).all()


def test_mixture_falls_back_to_the_part_that_has_signal():
    hist = ReleasedHistogram(labels=("a", "b"), terms=("t0", "t1", "t2"),
                             counts=np.array([[10.0, 0, 0], [0, 0, 0]]), row_sums=np.zeros(2),
                             floor=1.0, noise_scale=1.0)

    class Kde:
        name = "kde"

        def weights(self, label):
            return np.array([0.0, 1.0, 3.0])

    mix = MixtureModel(HistogramModel(hist), Kde(), 0.5)
    assert mix.weights("a").tolist() == pytest.approx([0.5, 0.125, 0.375])
    assert mix.weights("b").tolist() == pytest.approx([0.0, 0.25, 0.75])  # KDE alone


def test_neighbour_kernel_spreads_counts_to_near_terms_only():
    emb = np.array([[1.0, 0], [0.96, 0.28], [0, 1.0]], dtype=np.float32)
    kern = neighbour_kernel(emb, 2, 0.5).toarray()
    assert kern[0, 0] == pytest.approx(1.0) and 0 < kern[0, 1] < 1 and kern[0, 2] == 0
    hist = ReleasedHistogram(labels=("a", "b"), terms=("x", "y", "z"),
                             counts=np.array([[10.0, 0, 0], [0, 0, 10.0]]),
                             row_sums=np.zeros(2), floor=1.0, noise_scale=1.0)
    model = SmoothedHistogramModel(hist, neighbour_kernel(emb, 2, 0.5), 0.5)
    w = model.weights("a")
    assert w[0] > w[1] > 0 == w[2]  # "y" is near "x": it inherits some of a's mass


def test_fold_of_is_per_document_and_salted():
    texts = [f"document {i}" for i in range(4000)]
    a, b = fold_of(texts, 0.2), fold_of(texts, 0.2)
    assert 0.15 < a.mean() < 0.25 and 0.15 < b.mean() < 0.25
    assert (a != b).any()  # a fresh secret salt each run
    with pytest.raises(ValueError):
        fold_of(texts, 1.5)


def test_ledger_folds_compose_in_parallel():
    def rel(eps, fold, mech="laplace"):
        return Release(name="r", mechanism=mech, neighbouring="x", sensitivity_norm="L1",
                       sensitivity=1.0, sensitivity_reason="x", noise_scale=1.0,
                       noise_multiplier=1.0, dimension=1, epsilon=eps, delta=0.0, fold=fold)

    g = compose([rel(2.0, "fit"), rel(1.0, "fit"), rel(2.5, "validation", "report-noisy-max")])
    assert g.epsilon == pytest.approx(3.0) and "parallel" in g.method
    # a release on every document composes with each fold
    g = compose([rel(2.0, "fit"), rel(2.5, "validation"), rel(0.5, None)])
    assert g.epsilon == pytest.approx(3.0)
    assert compose([rel(2.0, None), rel(2.5, None)]).epsilon == pytest.approx(4.5)
    # two runs split their documents independently: a document can be in run 1's fit
    # fold and run 2's validation fold, so the runs' costliest folds add up
    g = compose([rel(6.0, "r1: fit"), rel(1.0, "r1: validation"),
                 rel(1.0, "r2: fit"), rel(6.0, "r2: validation")])
    assert g.epsilon == pytest.approx(12.0)


def test_select_noisy_max_records_and_prefers_the_best():
    ledger = PrivacyLedger()
    picks = [select_noisy_max([0, 500, 3], sensitivity=1, epsilon=1.0, ledger=ledger,
                              name="model selection", reason="test") for _ in range(20)]
    assert picks == [1] * 20
    r = ledger.releases[0]
    assert r.mechanism == "report-noisy-max" and r.epsilon <= 1.0 and r.fold == "validation"
    assert ledger.guarantee().epsilon == pytest.approx(20 * r.epsilon)


def test_margin_scores_give_the_first_candidate_a_head_start_of_bounded_sensitivity():
    correct = np.array([[1, 1, 0], [0, 1, 1], [0, 1, 0], [1, 0, 0]])
    assert margin_scores(correct, 0.0) == ([2, 3, 1], 1)  # plain counts
    # 1/4 of candidate 0's errors count as right: 3 per right answer, 1 per document
    scores, sens = margin_scores(correct, 0.25)
    assert scores == [3 * 2 + 4, 4 * 3, 4 * 1] and sens == 4
    # add/remove one scored document: every score moves the same way, by at most sens
    for row in ([1, 1, 1], [0, 0, 0], [1, 0, 0], [0, 1, 1]):
        after, _ = margin_scores(np.vstack([correct, row]), 0.25)
        moves = np.subtract(after, scores)
        assert (moves >= 0).all() and moves.max() <= sens
    # another candidate must remove more than a tenth of candidate 0's 40 errors
    base = np.zeros((100, 2), dtype=int)
    base[:60, :] = 1
    near, clear = base.copy(), base.copy()
    near[60:63, 1] = 1  # 3 of the 40 errors removed: not enough
    clear[60:66, 1] = 1  # 6 of them: enough
    ledger = PrivacyLedger()
    for correct, best in ((base, 0), (near, 0), (clear, 1)):
        scores, sens = margin_scores(correct, 0.1)
        picks = {select_noisy_max(scores, sensitivity=sens, epsilon=200.0, ledger=ledger,
                                  name="model selection", reason="test") for _ in range(20)}
        assert picks == {best}


def test_embedded_is_the_unit_sum_of_term_embeddings():
    emb = np.array([[3.0, 0.0], [0.0, 4.0], [1.0, 1.0]])
    v = embedded(presence_matrix([np.array([0, 1, 1]), np.array([], dtype=int)], 3), emb)
    np.testing.assert_allclose(v[0], [0.6, 0.8])  # a repeated term counts once
    assert not v[1].any()  # a document without a Ṽ term stays at zero


def test_candidate_score_is_bounded_per_document():
    hist = ReleasedHistogram(labels=("a", "b"), terms=("t0", "t1", "t2", "t3"),
                             counts=np.array([[9.0, 9, 0, 0], [0, 0, 9, 9]]),
                             row_sums=np.zeros(2), floor=1.0, noise_scale=1.0)
    docs = [np.array([0, 1]), np.array([2]), np.array([3, 0, 1]), np.array([], dtype=int)]
    x = presence_matrix(docs, 4)
    y = np.array([0, 1, 0, 1])
    emb = np.eye(4)  # four orthogonal terms
    right = candidate_correct(HistogramModel(hist), ("a", "b"), embedded(x, emb), y,
                              term_embeddings=emb, per_class=20, length=2,
                              rng=np.random.default_rng(0))
    assert set(right.tolist()) <= {0, 1} and right[:3].tolist() == [1, 1, 1]
    # one more validation document changes the total by at most 1
    x2 = presence_matrix([*docs, np.array([2, 3])], 4)
    right2 = candidate_correct(HistogramModel(hist), ("a", "b"), embedded(x2, emb),
                               np.append(y, 0), term_embeddings=emb, per_class=20, length=2,
                               rng=np.random.default_rng(0))
    assert abs(int(right2.sum()) - int(right.sum())) <= 1
    # an empty validation fold scores nothing (and does not fail)
    none = candidate_correct(HistogramModel(hist), ("a", "b"),
                             embedded(presence_matrix([], 4), emb), np.zeros(0, dtype=int),
                             term_embeddings=emb, per_class=20, length=2,
                             rng=np.random.default_rng(0))
    assert none.shape == (0,)


@pytest.mark.parametrize("model", ["histogram", "smoothed", "hybrid"])
def test_seeder_histogram_and_hybrid_without_selection(model):
    seeder = _seeder(model=model, select="none").fit(_corpus(), rng=np.random.default_rng(0))
    names = [r.name for r in seeder.ledger_.releases]
    assert names[0].startswith("class × term histogram")
    assert ("KDE sketch sums" in names) == (model == "hybrid")
    assert not any("selection" in n for n in names)
    g = seeder.ledger_.guarantee()
    assert g.epsilon <= 8.0 + 1e-6
    seqs = seeder.sample(30, rng=np.random.default_rng(1))
    fruit = set(TERMS[:6])
    for s in seqs:
        assert len(set(s.keyphrases)) == len(s.keyphrases) <= 3
    share = {lab: np.mean([t in fruit for s in seqs if s.label == lab for t in s.keyphrases])
             for lab in ("fruit", "sport")}  # the share of fruit terms in each class
    assert share["fruit"] > 0.75 > 0.25 > share["sport"]


def test_seeder_selects_privately_by_default_and_the_ledger_says_so():
    """The default selection is shared: it scores documents the histogram also counts and
    pays its own share of the total ε (sequential); planned = released; total ≤ ε."""
    seeder = _seeder()
    assert seeder.model == "auto" and seeder.select == "auto"
    planned = seeder.planned_releases()
    assert compose(planned).epsilon == pytest.approx(8.0, abs=1e-3)
    seeder.fit(_corpus(300), rng=np.random.default_rng(0))
    recs = seeder.ledger_.releases
    sel = [r for r in recs if r.mechanism == "report-noisy-max"]
    assert len(sel) == 1 and sel[0].name.startswith("model selection")
    assert sel[0].epsilon == pytest.approx(seeder.selection_share * 8.0)
    assert {r.fold for r in recs} == {None}  # no fold: every document is in every release
    made = {r.name.split(" (")[0]: r for r in recs}.values()  # the form: one per class
    assert [(r.name.split(" (")[0], r.epsilon) for r in planned] == \
        [(r.name.split(" (")[0], pytest.approx(r.epsilon)) for r in made]
    assert FORM_NAME in [r.name for r in made]  # form="auto": scored by the selection
    g = seeder.ledger_.guarantee()
    assert g.epsilon <= 8.0 + 1e-6 and "parallel" not in g.method
    assert seeder.selection_["selected"] and seeder.selection_["split"] == "shared"
    assert seeder.selection_["chosen"] in seeder.selection_["candidates"]
    assert len(seeder.selection_["candidates"]) == len(seeder.candidate_specs()) > 1
    assert any("of the total" in line and "10% of the documents that one got wrong" in line
               for line in seeder.summary_lines())
    assert not any(line.startswith("most classes") for line in seeder.summary_lines())
    assert seeder.selection_["validation_share"] == 0.5  # shared: half the documents scored
    assert "head start: 0.1" in sel[0].sensitivity_reason and sel[0].sensitivity == 10
    assert len(seeder.sample(5, rng=np.random.default_rng(2))) == 10


def test_holdout_selection_composes_in_parallel():
    """``selection_split="holdout"`` (and per-stage budgets) keep the disjoint validation
    fold: the selection costs what the fit fold adds, so the run stays at its ε."""
    for kw in ({"selection_split": "holdout"},
               {"epsilon": None, "epsilon_vocab": 2.0, "epsilon_kde": 6.0}):
        seeder = _seeder(**kw).fit(_corpus(300), rng=np.random.default_rng(0))
        recs = seeder.ledger_.releases
        sel = [r for r in recs if r.mechanism == "report-noisy-max"]
        # the form profile (form="auto") counts every document, like S's choice would
        assert sel[0].fold == "validation" and {r.fold for r in recs if r is not sel[0]
                                                 and r.name != FORM_NAME} == {"fit"}
        # ... under one total ε; per-stage budgets (each stage its own ε) plan none
        assert {r.fold for r in recs if r.name == FORM_NAME} == \
            (set() if kw.get("epsilon_vocab") else {None})
        assert "parallel" in seeder.ledger_.guarantee().method
        assert seeder.selection_["split"] == "holdout"
        assert seeder.selection_["validation_share"] == 0.1  # a holdout fold: a tenth
        assert any("held-out fold" in line for line in seeder.summary_lines())
    with pytest.raises(ValueError, match="total epsilon"):
        _seeder(epsilon=None, epsilon_vocab=2.0, epsilon_kde=6.0,
                selection_split="shared").validate()


def test_shared_selection_counts_every_document():
    """With a shared selection the histogram counts the scored documents too (a holdout
    fold leaves them out): with almost no noise, the kept counts are the whole corpus's."""
    corpus = _corpus(100)
    exact = class_term_counts(
        PublicVocabulary("toy", TERMS).extractor().extract_many(
            corpus.texts, max_terms=4, distinct=True),
        np.array([0 if lab == "fruit" else 1 for lab in corpus.labels]), 2, len(TERMS))
    shared = _seeder(epsilon=1e3).fit(corpus, rng=np.random.default_rng(0)).histogram_
    holdout = _seeder(epsilon=1e3, selection_split="holdout").fit(
        corpus, rng=np.random.default_rng(0)).histogram_
    order = [TERMS.index(t) for t in shared.terms]
    assert np.allclose(shared.counts, exact.toarray()[:, order], atol=0.5)
    assert holdout.counts.sum() < shared.counts.sum() - 5


def test_unlabelled_corpus_selects_nothing():
    corpus = Corpus(texts=_corpus().texts)
    seeder = _seeder(labels=None).fit(corpus, rng=np.random.default_rng(0))
    assert not seeder.selection_["selected"]
    assert all(r.fold is None for r in seeder.ledger_.releases)
    assert all(s.label is None for s in seeder.sample(4, rng=np.random.default_rng(1)))


def test_tiny_corpus_degrades_to_short_or_empty_sequences_without_noise_terms():
    tiny = Corpus(texts=("apple banana", "goal match", "apple", "team"),
                  labels=("fruit", "sport", "fruit", "sport"))
    with pytest.warns(UserWarning, match="rose above the noise"):
        seeder = _seeder(epsilon=0.1, model="histogram", select="none",
                         vocab_noise_terms=0.01).fit(tiny, rng=np.random.default_rng(0))
    seqs = seeder.sample(3, rng=np.random.default_rng(1))
    assert len(seqs) == 6
    kept = set(seeder.released_vocabulary_)
    assert len(kept) < 3 and all(set(s.keyphrases) <= kept for s in seqs)
    assert any("above the noise" in line for line in seeder.summary_lines())
    assert any(line.startswith("most classes (2 of 2) are weak")
               for line in seeder.summary_lines())


def test_bad_model_options_rejected():
    with pytest.raises(ValueError, match="model"):
        _seeder(model="forest").validate()
    with pytest.raises(ValueError, match="select"):
        _seeder(select="maybe").validate()
    with pytest.raises(ValueError, match="iterative"):
        _seeder(model="histogram", method="iterative").validate()
    with pytest.raises(ValueError, match="mixture"):
        _seeder(mixture=1.5).validate()
