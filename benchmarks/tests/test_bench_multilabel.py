"""bench_multilabel: the scores, the cell keys and the report of its cells (no corpus, no
fitting)."""

import pytest

from bench_multilabel import cell_key, micro_f1, summarize

LABELS = ("a", "b")
REFS = {3: {"ceiling": {"micro_f1": 0.85, "macro_f1": 0.85, "macro_auc": 0.88},
            "floor": 0.79}}


def _kps(eps, seed, f1, **kw):
    return {"n": 3, "epsilon": eps, "seed": seed, "label_set_model": "marginal",
            "max_labels_per_doc": 10, "length": 30, "sampler": "label contrast",
            "micro_f1": f1, "macro_f1": f1, **kw}


def _dpft(eps, seed, f1, auc):
    return {"n": 3, "epsilon": eps, "seed": seed, "method": "dpft", "micro_f1": f1,
            "macro_f1": f1, "macro_auc": auc, "tv_sets": 0.1, "mean_words": 30.0,
            "seconds": 600.0}


def test_the_auc_reads_the_text_where_f1_credits_every_label():
    train = ["alpha words here", "beta words here"] * 10
    sets = [("a",), ("b",)] * 10
    test = ["alpha text", "beta text", "alpha beta"]
    truth = [("a",), ("b",), ("a", "b")]
    good = micro_f1(train, sets, test, truth, LABELS)
    assert good["macro_auc"] == pytest.approx(1.0)
    noise = micro_f1(["same words"] * 20, sets, test, truth, LABELS)
    assert noise["macro_auc"] == pytest.approx(0.5)  # nothing in the text to read


def test_one_label_to_fit_is_scored_too():
    """"a" held by every training document is predicted everywhere (not fitted); "b" is
    the one label fitted, which scikit-learn answers as a vector."""
    train = ["alpha beta", "alpha only"] * 10
    sets = [("a", "b"), ("a",)] * 10
    got = micro_f1(train, sets, ["beta here", "alpha", "beta"], [("a", "b"), ("a",), ("b",)],
                   LABELS)
    assert got["micro_f1"] == pytest.approx(8 / 9)  # "a" predicted for the third too
    assert got["macro_auc"] == pytest.approx(0.75)  # "a" unread (0.5), "b" read (1.0)


def test_dpft_cells_have_their_own_key():
    assert cell_key(_dpft(6.0, 0, 0.7, 0.6)) == (3, "6", 0, "dpft", "sets released")
    assert cell_key({**_dpft(6.0, 0, 0.7, 0.6), "codes": "every set public"})[-1] \
        == "every set public"  # a new design's cells are not skipped
    assert cell_key(_dpft(6.0, 0, 0.7, 0.6)) != cell_key(_kps(6.0, 0, 0.7))


def test_the_report_shows_the_floor_and_a_dash_for_cells_without_the_auc():
    rows = [_kps(6.0, s, 0.75) for s in (0, 1)] + [_kps("∞", s, 0.7) for s in (0, 1)]
    rows += [_dpft(6.0, s, 0.73, 0.55) for s in (0, 1, 2)]
    body = summarize(rows, REFS, {3: 0.1})
    kps_row = next(line for line in body.splitlines() if "| label contrast |" in line
                   and "| 6 |" in line)
    assert "| — |" in kps_row and "| 0.850 / 0.880 | 0.790 |" in kps_row
    dpft_row = next(line for line in body.splitlines()
                    if line.startswith("| 3 | sets released | 6 | 3 |"))
    assert "0.550 ± 0.000" in dpft_row and "| 0.790 |" in dpft_row
    assert "| — |" in dpft_row  # no ε → ∞ dpft cell to stand beside it
    # the old design's cells do not count toward the current design's 9 cells a finding count
    assert "not run: n = 3: 9 of 9." in body
    new = [{**_dpft(e, s, 0.7, 0.6), "codes": "every set public"}
           for e in (3.0, 6.0, "∞") for s in (0, 1, 2)]
    assert "not run: none." in summarize(rows + new, REFS, {3: 0.1})
    one = summarize(rows + new[:1], REFS, {3: 0.1})
    assert "not run: n = 3: 8 of 9." in one and "0.600 (1 seed)" in one
