"""FPED/FNED/TPED/TNED and equalized odds against a hand-computed case."""

from __future__ import annotations

import numpy as np
import pytest

from dptext.evaluate.fairness import binary_fairness, multiclass_fairness


def test_binary_fairness_by_hand():
    # group A: y=[1,1,0,0] p=[1,0,0,0] -> TPR 1/2, FNR 1/2, FPR 0, TNR 1
    # group B: y=[1,1,0,0] p=[1,1,1,0] -> TPR 1,   FNR 0,   FPR 1/2, TNR 1/2
    # overall: TPR 3/4, FNR 1/4, FPR 1/4, TNR 3/4
    y = np.array([1, 1, 0, 0, 1, 1, 0, 0])
    p = np.array([1, 0, 0, 0, 1, 1, 1, 0])
    g = ["A"] * 4 + ["B"] * 4
    r = binary_fairness(y, p, g)
    assert r["TPED"] == pytest.approx(0.25 + 0.25)
    assert r["FNED"] == pytest.approx(0.5)
    assert r["FPED"] == pytest.approx(0.25 + 0.25)
    assert r["TNED"] == pytest.approx(0.5)
    # EO = max(TPR gap 1/2, FPR gap 1/2)
    assert r["equalized_odds"] == pytest.approx(0.5)
    assert r["per_group"]["A"]["tpr"] == pytest.approx(0.5)


def test_perfect_classifier_is_fair():
    y = np.array([0, 1, 2, 0, 1, 2])
    r = multiclass_fairness(y, y.copy(), ["x", "x", "x", "y", "y", "y"], ["a", "b", "c"], False)
    for k in ("FPED", "FNED", "TPED", "TNED", "equalized_odds"):
        assert r[k] == pytest.approx(0.0)
    assert set(r["per_class"]) == {"a", "b", "c"}
