"""Membership inference (``dptext.evaluate.membership``): the statistics on inputs with
known answers, a positive and a negative control on real BBC News text, the suite and
the CLI path."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score
from typer.testing import CliRunner

from dptext.cli import app
from dptext.corpus import read_corpus, write_jsonl
from dptext.evaluate.data import Labelled, from_corpus
from dptext.evaluate.membership import (
    attack_statistics,
    balanced_indices,
    bootstrap_auc_interval,
    membership_report,
    public_surprise,
    rank_auc,
    rare_ngram_scores,
    tpr_at_fpr,
)
from dptext.evaluate.suite import EvalConfig, evaluate
from eval_helpers import HashEncoder, toy_corpus

# --------------------------------------------------------------------------- statistics


def test_perfectly_separated_scores_give_auc_one():
    res = attack_statistics(np.arange(200) + 1000.0, np.arange(200.0),
                            rng=np.random.default_rng(0), resamples=200)
    assert res["auc"] == 1.0 and res["auc_ci"] == [1.0, 1.0]
    assert res["tpr_at_fpr"] == 1.0
    assert res["roc"]["fpr"][0] == 0 and res["roc"]["tpr"][-1] == 1


def test_identical_distributions_give_auc_near_half_inside_the_interval():
    rng = np.random.default_rng(1)
    res = attack_statistics(rng.normal(size=400), rng.normal(size=400),
                            rng=np.random.default_rng(2))
    lo, hi = res["auc_ci"]
    assert abs(res["auc"] - 0.5) < 0.05
    assert lo < 0.5 < hi and hi - lo < 0.12
    assert res["tpr_at_fpr"] < 0.05


def test_shifted_distributions_give_the_known_auc():
    """Normal(d, 1) against Normal(0, 1): AUC = Phi(d / sqrt 2), about 0.76 for d = 1."""
    rng = np.random.default_rng(3)
    res = attack_statistics(rng.normal(1.0, size=1000), rng.normal(size=1000),
                            rng=np.random.default_rng(4), resamples=500)
    lo, hi = res["auc_ci"]
    assert lo < 0.7602 < hi and hi - lo < 0.06


def test_rank_auc_counts_ties_as_sklearn_does():
    rng = np.random.default_rng(5)
    a, b = rng.integers(0, 4, (3, 30)).astype(float), rng.integers(0, 3, (3, 25)).astype(float)
    y = np.r_[np.ones(30), np.zeros(25)]
    want = [roc_auc_score(y, np.r_[m, n]) for m, n in zip(a, b, strict=True)]
    np.testing.assert_allclose(rank_auc(a, b), want)


def test_bootstrap_interval_is_reproducible_from_its_seed():
    rng = np.random.default_rng(6)
    a, b = rng.normal(0.3, size=80), rng.normal(size=80)
    one = bootstrap_auc_interval(a, b, rng=np.random.default_rng(7), resamples=300)
    two = bootstrap_auc_interval(a, b, rng=np.random.default_rng(7), resamples=300)
    assert one == two and one[0] < roc_auc_score(np.r_[np.ones(80), np.zeros(80)],
                                                 np.r_[a, b]) < one[1]


def test_tpr_at_fpr_interpolates_between_roc_vertices():
    fpr, tpr = np.array([0, 0, 0.02, 1]), np.array([0, 0.4, 0.6, 1])
    assert tpr_at_fpr(fpr, tpr, 0.01) == pytest.approx(0.5)
    # a vertical segment at exactly the target: its top
    assert tpr_at_fpr(np.array([0, 0.01, 0.01, 1]), np.array([0, 0.2, 0.3, 1]), 0.01) == 0.3


def test_too_few_non_members_leave_the_tpr_unresolved():
    res = attack_statistics(np.arange(50) + 100.0, np.arange(50.0),
                            rng=np.random.default_rng(0), resamples=50)
    assert res["tpr_at_fpr"] is None
    assert "50 non-members resolve a false-positive rate of 0.02" in res["tpr_note"]


# --------------------------------------------------------------------------- balanced sets


def test_balanced_sets_match_labels_and_drop_copies_of_members():
    members = [f"member {i}" for i in range(30)]
    labels_m = ["a"] * 20 + ["b"] * 10
    non = [f"other {i}" for i in range(12)] + ["Member 0!", "c only"]
    labels_n = ["a"] * 4 + ["b"] * 8 + ["a", "c"]
    m, n = balanced_indices(members, non, member_labels=labels_m, non_member_labels=labels_n,
                            rng=np.random.default_rng(0))
    assert len(m) == len(n) == 12  # a: min(20, 4); b: min(10, 8); c: no members
    assert sorted(np.array(labels_m)[m]) == sorted(np.array(labels_n)[n])
    assert 12 not in n  # "Member 0!" has the tokens of a member
    assert len(set(m)) == len(m) and len(set(n)) == len(n)
    m, n = balanced_indices(members, non, max_per_side=5, rng=np.random.default_rng(0))
    assert len(m) == len(n) == 5


def test_keyphrase_form_duplicates_are_judged_on_the_documents():
    """Distinct documents with the same phrase sequence are not duplicates."""
    seqs = Labelled(texts=("goal, match",) * 12, labels=None)
    syn = Labelled(texts=("goal, match",), labels=None)
    docs = tuple(f"member {i} scored a goal in the match" for i in range(12)), \
        tuple(f"test document {i} about a goal in a match" for i in range(12))
    res = membership_report(syn, seqs, seqs, embed=_embed, originals=docs, resamples=50)
    assert res["n_non_members"] == 12 and "attacks" in res
    res = membership_report(syn, seqs, seqs, embed=_embed, resamples=50)
    assert res["n_non_members"] == 0 and "fewer than 10" in res["skipped"]


# --------------------------------------------------------------------------- rare n-grams


def test_rare_ngrams_are_judged_against_public_english():
    s = public_surprise(["the", "of the", "zorblaxian", "the zorblaxian"])
    assert s[0] < 2 and s[1] < 2 and s[2] == pytest.approx(9) and s[3] == pytest.approx(9)
    synthetic = ["the zorblaxian treaty was signed in the city of the river"]
    scores = rare_ngram_scores(["the zorblaxian treaty was signed", "the city of the river",
                                "a quintessarine treaty"], synthetic)
    assert scores[0] == 1.0  # all its rare n-grams occur in the release
    part = rare_ngram_scores(["a zorblaxian treaty"], synthetic)[0]
    assert 0 < part < 1  # "zorblaxian treaty" is shared, "a zorblaxian" is not
    assert scores[1] == 0.0  # common words only: nothing rare to share
    assert scores[2] == 0.0  # its rare word is not in the release


# --------------------------------------------------------------------------- controls on real text


@pytest.fixture(scope="module")
def bbc():
    """Per class: 40 private documents, 40 other training documents (never members),
    40 test documents; drawn at random positions (neighbouring BBC files often follow
    the same story)."""
    rng = np.random.default_rng(0)
    train, test = read_corpus("demo:bbc-news/train"), read_corpus("demo:bbc-news/test")
    pick = {name: [] for name in ("private", "other", "test")}
    for ix in train.class_indices().values():
        ix = rng.permutation(ix)
        pick["private"].extend(ix[:40])
        pick["other"].extend(ix[40:80])
    for ix in test.class_indices().values():
        pick["test"].extend(rng.permutation(ix)[:40])
    return {"private": from_corpus(train.subset(pick["private"])),
            "other": from_corpus(train.subset(pick["other"])),
            "test": from_corpus(test.subset(pick["test"]))}


def _embed(texts):
    return HashEncoder(256).encode(list(texts))


def test_positive_control_copying_a_fifth_of_the_private_documents(bbc):
    prv = bbc["private"]
    copied = np.random.default_rng(1).choice(len(prv), len(prv) // 5, replace=False)
    syn = Labelled(texts=tuple(prv.texts[i] for i in copied), labels=None)
    res = membership_report(syn, prv, bbc["test"], embed=_embed)
    assert res["n_members"] == res["n_non_members"] == 200
    for name, r in res["attacks"].items():
        # copied members are found, the rest look like non-members: AUC ~ 0.5 + 0.2 / 2
        assert r["auc_ci"][0] > 0.52, name
        assert r["tpr_at_fpr"] > 0.15, name  # ~ the share copied, vs 0.01 by chance


def test_negative_control_unrelated_synthetic_text(bbc):
    res = membership_report(bbc["other"], bbc["private"], bbc["test"], embed=_embed)
    for name, r in res["attacks"].items():
        assert r["auc_ci"][0] < 0.5 < r["auc_ci"][1], name
        assert r["tpr_at_fpr"] < 0.06, name


# --------------------------------------------------------------------------- suite and CLI


def test_suite_runs_membership_with_a_private_corpus_and_skips_without():
    syn, test, prv = toy_corpus(10, 0), toy_corpus(10, 1), toy_corpus(10, 2)
    cfg = EvalConfig(classifiers=("tfidf",), leakage=False, fidelity=False, coherence=False)
    m = evaluate(syn, test, private=prv, cfg=cfg, encoder=HashEncoder())
    assert set(m["membership"]["attacks"]) == {"embedding_distance", "rare_ngrams"}
    assert m["membership"]["n_members"] == 30 and "membership" in m["timings_s"]
    m = evaluate(syn, test, cfg=cfg, encoder=HashEncoder())
    assert "needs the private corpus (--private)" in m["membership"]["skipped"]
    assert "skipped" in membership_report(syn, prv, None, embed=_embed)
    off = EvalConfig(classifiers=("tfidf",), leakage=False, fidelity=False, coherence=False,
                     membership=False)
    assert "membership" not in evaluate(syn, test, private=prv, cfg=off, encoder=HashEncoder())


def test_cli_writes_membership_into_metrics_and_report(tmp_path, bbc):
    """Real MiniLM; a release that copies every private document is given away."""
    cut = 300  # short documents keep MiniLM fast
    prv = [t[:cut] for t in bbc["private"].texts[::8]]
    labels = bbc["private"].labels[::8]
    pd.DataFrame({"text": prv, "label": labels}).to_csv(tmp_path / "train.csv", index=False)
    pd.DataFrame({"text": [t[:cut] for t in bbc["test"].texts[::8]],
                  "label": bbc["test"].labels[::8]}).to_csv(tmp_path / "test.csv", index=False)
    write_jsonl(({"text": t, "label": lab} for t, lab in zip(prv, labels, strict=True)),
                tmp_path / "synthetic.jsonl")
    res = CliRunner().invoke(app, [
        "evaluate", "--synthetic", str(tmp_path / "synthetic.jsonl"),
        "--real-test", str(tmp_path / "test.csv"), "--private", str(tmp_path / "train.csv"),
        "--classifiers", "tfidf", "--no-fidelity", "--no-leakage", "--no-coherence",
        "--out", str(tmp_path / "report")])
    assert res.exit_code == 0, res.output
    mem = json.loads((tmp_path / "report" / "metrics.json").read_text())["membership"]
    assert mem["n_members"] == 25
    att = mem["attacks"]
    assert att["embedding_distance"]["auc"] == 1.0  # every member has an exact copy
    assert att["rare_ngrams"]["auc_ci"][0] > 0.7  # a 300-character text may have no rare n-gram
    for r in att.values():
        assert r["tpr_at_fpr"] is None and "25 non-members" in r["tpr_note"]
    html = (tmp_path / "report" / "report.html").read_text()
    assert 'id="membership"' in html and "ROC curves of the membership attacks" in html
    assert "AUC" not in res.output  # private-data figures stay out of the terminal
