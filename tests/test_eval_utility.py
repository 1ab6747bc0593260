"""Utility metrics, classifiers, Deep CORAL and the keyphrase-only protocol."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dptext.evaluate.domain import coral_loss, covariance
from dptext.evaluate.keyphrases import release_vocabulary, sequence_length, to_sequences
from dptext.evaluate.suite import EvalConfig, _EmbeddingCache, run_utility
from dptext.evaluate.utility import (
    LabelSpace,
    MLPConfig,
    classification_metrics,
    mlp_head,
    text_free_floor,
    tfidf_logreg,
)
from eval_helpers import HashEncoder, toy_corpus


def test_single_label_metrics_by_hand():
    y = np.array([0, 0, 1, 1, 2])
    p = np.array([0, 1, 1, 1, 0])
    m = classification_metrics(y, p, multilabel=False)
    assert m["accuracy"] == pytest.approx(3 / 5)
    # F1 class0: P=1/2 R=1/2 -> 0.5; class1: P=2/3 R=1 -> 0.8; class2: 0 -> macro 1.3/3
    assert m["macro_f1"] == pytest.approx((0.5 + 0.8 + 0.0) / 3)


def test_multilabel_metrics_by_hand():
    y = np.array([[1, 0], [1, 1], [0, 1]])
    p = np.array([[1, 0], [1, 0], [0, 1]])
    m = classification_metrics(y, p, multilabel=True)
    assert m["subset_accuracy"] == pytest.approx(2 / 3)
    # micro: TP=3, FP=0, FN=1 -> F1 = 6/7; macro: class0 F1=1, class1 P=1 R=1/2 -> 2/3
    assert m["micro_f1"] == pytest.approx(6 / 7)
    assert m["macro_f1"] == pytest.approx((1 + 2 / 3) / 2)


def test_text_free_floor_by_hand():
    # multi-label: every label everywhere; TP=4, FP=2, FN=0 -> micro-F1 = 8/10
    y = np.array([[1, 0], [1, 1], [0, 1]])
    m = text_free_floor(y, multilabel=True)
    assert m["micro_f1"] == pytest.approx(0.8) and m["subset_accuracy"] == pytest.approx(1 / 3)
    assert m["predicts"] == "every label for every document"
    # single-label: the most frequent test class
    m = text_free_floor(np.array([2, 2, 0, 1, 2]), multilabel=False)
    assert m["accuracy"] == pytest.approx(3 / 5)
    assert m["macro_f1"] == pytest.approx((0 + 0 + 0.75) / 3)


def test_label_space_multilabel_encoding():
    space = LabelSpace.of([("a", "b"), ("c",)], ["a"])
    assert space.multilabel and space.classes == ("a", "b", "c")
    assert space.encode([("a", "c"), "b"]).tolist() == [[1, 0, 1], [0, 1, 0]]


def test_tfidf_and_mlp_learn_separable_topics():
    train, test = toy_corpus(30, seed=1), toy_corpus(10, seed=2)
    space = LabelSpace.of(train.labels)
    y_tr, y_te = space.encode(train.labels), space.encode(test.labels)
    p = tfidf_logreg(train.texts, y_tr, test.texts, False, 3)
    assert classification_metrics(y_te, p, False)["accuracy"] > 0.95
    enc = HashEncoder()
    p = mlp_head(enc.encode(train.texts), y_tr, enc.encode(test.texts), False, 3,
                 MLPConfig(epochs=30))
    assert classification_metrics(y_te, p, False)["accuracy"] > 0.9


def test_mlp_head_is_three_layers_and_deterministic():
    from dptext.evaluate.utility import _build_head

    features, out = _build_head(16, 3, MLPConfig())
    linears = [m for m in [*features, out] if isinstance(m, torch.nn.Linear)]
    assert len(linears) == 3
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(40, 16)).astype(np.float32), rng.integers(0, 3, 40)
    a = mlp_head(x, y, x, False, 3, MLPConfig(epochs=3), seed=7)
    b = mlp_head(x, y, x, False, 3, MLPConfig(epochs=3), seed=7)
    assert (a == b).all()


def test_coral_loss_by_hand():
    # source rows (0,0),(2,0): cov [[2,0],[0,0]]; target (0,0),(0,2): cov [[0,0],[0,2]]
    s = torch.tensor([[0.0, 0.0], [2.0, 0.0]])
    t = torch.tensor([[0.0, 0.0], [0.0, 2.0]])
    assert covariance(s).tolist() == [[2.0, 0.0], [0.0, 0.0]]
    # ||diff||_F^2 = 4 + 4 = 8; / (4 * 2^2) = 0.5
    assert coral_loss(s, t).item() == pytest.approx(0.5)
    assert coral_loss(s, s).item() == pytest.approx(0.0)


def test_run_utility_ceiling_ratio_and_coral():
    syn, test, real = toy_corpus(20, 3), toy_corpus(10, 4), toy_corpus(20, 5)
    unl = toy_corpus(10, 6)
    cfg = EvalConfig(classifiers=("tfidf", "mlp"), mlp_epochs=10)
    res, preds = run_utility(syn, test, real, unl, cfg, _EmbeddingCache(HashEncoder()))
    tf, mlp = res["classifiers"]["tfidf"], res["classifiers"]["mlp"]
    assert tf["ratio"] == pytest.approx(tf["synthetic"]["accuracy"] / tf["ceiling"]["accuracy"])
    assert "synthetic_coral" in mlp and "synthetic_coral" not in tf
    assert "mlp/synthetic_coral" in preds and res["task"] == "single-label"


def test_keyphrase_protocol_by_hand():
    kps = [["heart failure", "Aspirin"], ["fever", "cough", "x"]]
    terms = release_vocabulary(kps)
    assert terms == ["aspirin", "cough", "fever", "heart failure", "x"]
    assert sequence_length(kps) == 2  # median of (2, 3) -> 2.5 -> int 2
    seqs = to_sequences(["Acute heart-failure, then aspirin and fever; aspirin again."],
                        terms, k=2)
    assert seqs == ["heart failure, aspirin"]


def test_mlp_head_leaves_torchs_global_generator_as_it_found_it():
    """The head seeds torch's global generator from a public seed; later draws in the
    same process (DP-SGD noise, for instance) must not follow from that seed."""
    x = np.random.default_rng(0).normal(size=(40, 8)).astype(np.float32)
    y = np.arange(40) % 2
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    mlp_head(x, y, x, False, 2)
    assert torch.equal(torch.rand(3), expected)
