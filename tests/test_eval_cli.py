"""``dptext evaluate`` end to end on a small slice of BBC News (real MiniLM, spaCy, NLI)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from cli_output import said
from dptext.cli import app
from dptext.corpus import write_jsonl
from dptext.evaluate.data import Labelled, read_synthetic
from dptext.evaluate.suite import EvalConfig, evaluate, summary_rows
from eval_helpers import HashEncoder, toy_corpus


def test_evaluate_cli_writes_metrics_and_report(bbc_report):
    m = json.loads((bbc_report / "metrics.json").read_text())
    assert m["privacy"]["epsilon"] == 6.0
    util = m["utility"]["classifiers"]
    for name in ("tfidf", "mlp"):
        assert util[name]["ceiling"]["accuracy"] > 0.6
        assert util[name]["ratio"] > 0.5
    assert "synthetic_coral" in util["mlp"]
    assert m["leakage"]["canaries"]["n_found"] == 1
    assert m["leakage"]["canaries"]["n_secret_found"] == 1
    assert set(m["leakage"]["ngrams"]["overlap"]) == {str(n) for n in range(1, 8)}
    assert m["leakage"]["entities"]["n_private_entities"] > 0
    assert m["fairness"]["groups"]["sex"]["equalized_odds"] >= 0
    assert 0 <= m["coherence"]["mean_score"] <= 1
    assert m["fidelity"]["frechet_distance"] >= 0
    html = (bbc_report / "report.html").read_text()
    assert "<img" in html and "ε = 6" in html
    assert "http://" not in html and "https://" not in html  # self-contained


def test_report_shows_no_private_only_text(bbc_report):
    """Private documents are not in the report except as they appear in synthetic text."""
    d = bbc_report.parent
    private = pd.read_csv(d / "train.csv")["text"].tolist()
    html = (bbc_report / "report.html").read_text()
    synthetic = " ".join(read_synthetic(d / "synthetic.jsonl").texts)
    for doc in private:
        for sentence in doc.split(".")[1:4]:
            s = sentence.strip()
            if len(s) > 60 and s not in synthetic:
                assert s not in html


def test_evaluate_bad_input_is_a_clean_error(tmp_path):
    (tmp_path / "s.jsonl").write_text('{"label": "x"}\n')
    res = CliRunner().invoke(app, ["evaluate", "--synthetic", str(tmp_path / "s.jsonl"),
                                   "--real-test", "demo:bbc-news/test",
                                   "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "neither 'text' nor 'keyphrases'" in said(res.output)
    res = CliRunner().invoke(app, ["evaluate", "--synthetic", str(tmp_path / "s.jsonl"),
                                   "--real-test", "demo:bbc-news/test", "--classifiers",
                                   "mlp,svm", "--out", str(tmp_path / "o")])
    assert res.exit_code == 2
    assert "unknown classifier(s) svm; use tfidf, mlp, finetune" in said(res.output)


def test_keyphrase_file_protocol_and_multilabel(tmp_path):
    # keyphrase file: each record's phrases come from its topic
    rng = np.random.default_rng(0)
    from eval_helpers import TOPICS

    recs = [{"label": lab, "keyphrases": list(rng.choice(words, 5, replace=False))}
            for lab, words in TOPICS.items() for _ in range(15)]
    write_jsonl(recs, tmp_path / "kp.jsonl")
    syn = read_synthetic(tmp_path / "kp.jsonl")
    assert syn.keyphrase_only
    test, real = toy_corpus(8, 1), toy_corpus(15, 2)
    cfg = EvalConfig(classifiers=("tfidf", "mlp"), mlp_epochs=10, leakage=False,
                     coherence=False, map_points=0)
    m = evaluate(syn, test, private=real, cfg=cfg, encoder=HashEncoder())
    assert m["keyphrase_protocol"]["k"] == 5
    assert m["utility"]["keyphrase_only"] is True
    assert m["utility"]["classifiers"]["tfidf"]["synthetic"]["accuracy"] > 0.9
    # multi-label: labels are tuples
    multi = Labelled(texts=test.texts, labels=tuple((lab, "any") for lab in test.labels))
    m = evaluate(multi, multi, cfg=cfg, encoder=HashEncoder())
    assert m["utility"]["task"] == "multi-label"
    assert "subset_accuracy" in m["utility"]["classifiers"]["mlp"]["synthetic"]
    assert m["utility"]["floor"]["micro_f1"] == pytest.approx(2 / 3)  # {lab, any} of 3
    # its ratio and summary line read micro-F1, which subset accuracy is not
    multi_real = Labelled(texts=real.texts, labels=tuple((lab, "any") for lab in real.labels))
    m = evaluate(multi, multi, private=multi_real, cfg=cfg, encoder=HashEncoder())
    tf = m["utility"]["classifiers"]["tfidf"]
    assert tf["ratio"] == pytest.approx(tf["synthetic"]["micro_f1"] / tf["ceiling"]["micro_f1"])
    line = next(r["value"] for r in summary_rows(m) if "TF-IDF" in r["metric"])
    assert "micro-F1" in line and "accuracy" not in line
