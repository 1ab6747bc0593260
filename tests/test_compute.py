"""``dptext.compute``: the local engine's ``map_sum`` and the batch functions of the DP-KPS
counting stages (the same sums whatever the batching; the Ray engine's are in
tests/test_ray_engine.py)."""

from __future__ import annotations

import numpy as np
import pytest

from dptext.compute import LocalEngine, current_engine, map_sum, use_engine
from dptext.corpus import Corpus
from dptext.generators.kps.releases import DocumentTerms
from dptext.kde.rff import FourierFeatures
from dptext.kde.sketch import corpus_sketch_sums, exact_sums
from dptext.keyphrases.histogram import ClassTermCounts, class_term_counts
from dptext.text import PublicVocabulary
from dptext.text.extract import FirstTermCounts

TERMS = ("heart", "failure", "heart failure", "pain", "fever", "cough", "rash", "dose")
TEXTS = ["acute heart failure with pain", "fever and cough, then a rash", "pain pain pain",
         "", "dose of heart medicine for the fever", "nothing to see"] * 7


def test_map_sum_adds_integer_batches_whatever_their_size():
    vocab = PublicVocabulary("t", TERMS)
    fn = FirstTermCounts(vocab.extractor(), 2)
    whole = fn(TEXTS)
    for size in (1, 5, 100):
        got = LocalEngine().map_sum(fn, iter(TEXTS), size)
        assert got.dtype == np.int64 and np.array_equal(got, whole)
    assert np.array_equal(map_sum(fn, []), np.zeros(len(TERMS), dtype=np.int64))


def test_class_term_counts_batches_match_the_exact_histogram():
    vocab = PublicVocabulary("t", TERMS)
    ids = [i % 3 - 1 for i in range(len(TEXTS))]  # −1: counted in no row
    firsts = vocab.extractor().extract_many(TEXTS, max_terms=3, distinct=True)
    exact = class_term_counts(firsts, np.array(ids), 2, len(TERMS)).toarray()
    got = map_sum(ClassTermCounts(vocab.extractor(), 3, 2), list(zip(TEXTS, ids, strict=True)),
                  4)
    assert got.dtype == np.int64 and np.array_equal(got.toarray(), exact)


def test_corpus_sketch_sums_equal_exact_sums_of_each_class():
    released = PublicVocabulary("r", TERMS)
    rng = np.random.default_rng(0)
    emb = rng.standard_normal((len(TERMS), 6)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    feats = [FourierFeatures.draw(6, b, 50, 1.0, rng) for b in (1, 2)]
    labels = ["a", "b"]
    corpus = Corpus(tuple(TEXTS), tuple(labels[i % 2] for i in range(len(TEXTS))))
    ids = [i % 2 for i in range(len(TEXTS))]
    terms = DocumentTerms(released.extractor(), 4)
    seqs = terms(list(corpus.texts))
    expected = [np.concatenate(exact_sums([s for s, c in zip(seqs, ids, strict=True) if c == k],
                                          emb, feats, 3)) for k in range(2)]
    got = corpus_sketch_sums(list(zip(TEXTS, ids, strict=True)), 2, terms, emb, feats, 3,
                             batch_size=5)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == np.float64 and np.array_equal(g, e)


def test_document_terms_map_public_terms_into_the_released_vocabulary():
    vocab = PublicVocabulary("t", TERMS)
    to_released = np.full(len(TERMS), -1, dtype=np.int64)
    to_released[[3, 4]] = [0, 1]  # Ṽ = (pain, fever)
    (seq,) = DocumentTerms(vocab.extractor(), 5, to_released, limit=1)(
        ["heart failure, fever and pain"])
    assert seq.tolist() == [1]


def test_map_sum_refuses_floats():
    with pytest.raises(TypeError, match="integers only"):
        LocalEngine().map_sum(lambda b: np.ones(3), [1, 2], 1)


def test_engine_is_chosen_in_one_place():
    assert current_engine().name == "local"
    with use_engine("local") as outer, use_engine(None) as inner:  # None: the enclosing one
        assert inner is outer and current_engine() is outer
    with pytest.raises(ValueError, match="--ray-address needs --engine ray"), \
            use_engine("local", "auto"):
        pass
    with pytest.raises(ValueError, match="engine must be one of"), use_engine("spark"):
        pass
