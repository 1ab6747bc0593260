"""Fidelity and diversity metrics against hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from dptext.evaluate.fidelity import (
    distinct_n,
    embedding_map,
    frechet_distance,
    self_similarity,
    type_token_ratio,
)


def test_frechet_identical_and_shifted():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(500, 3))
    assert frechet_distance(x, x) == pytest.approx(0.0, abs=1e-6)
    # same covariance, mean shifted by (1, 2, 0): distance = |shift|^2 = 5
    assert frechet_distance(x, x + np.array([1.0, 2.0, 0.0])) == pytest.approx(5.0, abs=1e-6)


def test_frechet_1d_by_hand():
    # 1-D: (mu1-mu2)^2 + s1^2 + s2^2 - 2 s1 s2 = (0-0)^2 + (s1 - s2)^2
    x = np.array([[-1.0], [1.0]])  # var (ddof=1) 2
    y = np.array([[-2.0], [2.0]])  # var 8
    assert frechet_distance(x, y) == pytest.approx((np.sqrt(2) - np.sqrt(8)) ** 2)


def test_ttr_and_distinct_by_hand():
    texts = ["a b a b", "c c"]
    # per document: 2/4 and 1/2 -> mean 0.5
    assert type_token_ratio(texts) == pytest.approx(0.5)
    # unigrams: 6 tokens, 3 distinct; bigrams: (a b),(b a),(a b),(c c) -> 3 distinct of 4
    assert distinct_n(texts, 1) == pytest.approx(3 / 6)
    assert distinct_n(texts, 2) == pytest.approx(3 / 4)


def test_self_similarity_by_hand():
    e = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    # pairs: (0,1)=0, (0,2)=1, (1,2)=0 -> mean 1/3
    assert self_similarity(e) == pytest.approx(1 / 3)


def test_embedding_map_shapes():
    rng = np.random.default_rng(1)
    m = embedding_map(rng.normal(size=(40, 8)), rng.normal(size=(30, 8)) + 3, max_points=40)
    assert len(m["real"]) == 20 and len(m["synthetic"]) == 20
    assert len(m["real"][0]) == 2
