"""MUC, B³, CEAF-e, CoNLL F1 and mention F1 against values computed by hand."""

from __future__ import annotations

import pytest

from dptext.evaluate.coref.metrics import score

# Pradhan et al. 2014 (the reference scorer paper), figure 1: key {a,b,c} {d,e,f,g};
# response {a,b} {c,d} {f,g,h,i}. By the standard definitions:
# MUC  R = ((3-2) + (4-3)) / ((3-1) + (4-1)) = 2/5; P = ((2-1) + (2-2) + (4-3)) / (1+1+3) = 2/5
# B³   R = (4/3 + 1/3 + 1/4 + 4/4) / 7 = 35/84;      P = (4/2 + (1/2 + 1/2) + 4/4) / 8 = 1/2
# CEAF-e: φ4(K1,R1) = 2·2/5, φ4(K2,R3) = 2·2/8 is the best alignment, sum 1.3:
#      R = 1.3/2, P = 1.3/3
# mentions: 6 shared, 7 in the key, 8 in the response.
KEY = [["a", "b", "c"], ["d", "e", "f", "g"]]
RESPONSE = [["a", "b"], ["c", "d"], ["f", "g", "h", "i"]]


def _f(p, r):
    return 2 * p * r / (p + r)


def test_reference_paper_example():
    s = score([KEY], [RESPONSE])
    expected = {"muc": (2 / 5, 2 / 5), "b3": (1 / 2, 35 / 84), "ceafe": (1.3 / 3, 1.3 / 2),
                "mentions": (6 / 8, 6 / 7)}
    for name, (p, r) in expected.items():
        assert s[name]["precision"] == pytest.approx(p)
        assert s[name]["recall"] == pytest.approx(r)
        assert s[name]["f1"] == pytest.approx(_f(p, r))
    assert s["conll_f1"] == pytest.approx((_f(2 / 5, 2 / 5) + _f(1 / 2, 35 / 84)
                                           + _f(1.3 / 3, 1.3 / 2)) / 3)


def test_identical_partitions_score_one_and_disjoint_mentions_zero():
    s = score([KEY], [KEY])
    assert all(s[m]["f1"] == pytest.approx(1) for m in ("muc", "b3", "ceafe", "mentions"))
    z = score([KEY], [[["x", "y"]]])
    assert z["conll_f1"] == 0 and z["mentions"]["f1"] == 0


def test_all_singletons_response():
    """Every key mention found, nothing linked: MUC recall 0, B³ precision 1 and
    recall (1/3·3 + 1/4·4)/7 = 2/7, CEAF-e: two singletons aligned, φ4 = 2/4 and 2/5."""
    s = score([KEY], [[[m] for k in KEY for m in k]])
    assert s["muc"]["recall"] == 0 and s["muc"]["f1"] == 0
    assert s["b3"]["precision"] == pytest.approx(1)
    assert s["b3"]["recall"] == pytest.approx(2 / 7)
    assert s["ceafe"]["recall"] == pytest.approx((2 / 4 + 2 / 5) / 2)
    assert s["ceafe"]["precision"] == pytest.approx((2 / 4 + 2 / 5) / 7)


def test_documents_are_micro_averaged():
    """Counts are summed over documents before dividing (the reference scorer's way)."""
    both = score([KEY, [["p", "q"]]], [RESPONSE, [["p", "q"]]])
    assert both["muc"]["recall"] == pytest.approx((2 + 1) / (5 + 1))
    assert both["mentions"]["precision"] == pytest.approx((6 + 2) / (8 + 2))
