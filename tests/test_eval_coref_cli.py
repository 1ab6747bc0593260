"""``dptext evaluate --coref-gold`` on an unlabelled synthetic corpus (no --real-test)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from cli_output import said
from coref_helpers import extract_litbank, litbank_texts
from dptext.cli import app
from dptext.corpus import write_jsonl


def test_cli_writes_coreference_for_an_unlabelled_corpus(tmp_path):
    extract_litbank(tmp_path / "gold", 5)  # 1 test document, 4 train
    syn = tmp_path / "synthetic.jsonl"
    write_jsonl([{"text": t} for t in litbank_texts(skip=20, n=3)], syn)
    res = CliRunner().invoke(app, [
        "evaluate", "--synthetic", str(syn), "--coref-gold", str(tmp_path / "gold"),
        "--coref-max-tokens", "300", "--coref-max-docs", "3", "--no-fidelity",
        "--no-coherence", "--no-leakage", "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    m = json.loads((tmp_path / "out" / "metrics.json").read_text())
    cor = m["coreference"]
    assert cor["n_gold_train"] == 4 and cor["n_gold_test"] == 1
    assert cor["caps"]["max_tokens"] == 300 and cor["caps"]["max_docs"] == 3
    assert set(cor["models"]) == {"gold", "synthetic_silver", "shuffled_control"}
    for model in cor["models"].values():
        assert 0 <= model["conll_f1"] <= 1 and model["mentions"]["f1"] > 0
    assert m["utility"]["skipped"].startswith("no real test set")
    assert m["inputs"]["real_test"] is None
    html = (tmp_path / "out" / "report.html").read_text()
    assert 'id="coreference"' in html and "control: shuffled chains" in html
    assert "without a real test set" in html
    assert "Coreference: silver chains" in html  # the summary row, in the curator's report
    assert "Coreference" not in said(res.output)  # figures read real data: never printed


def test_cli_needs_a_test_set_or_gold(tmp_path):
    syn = tmp_path / "synthetic.jsonl"
    write_jsonl([{"text": "A man came in. He sat down."}], syn)
    res = CliRunner().invoke(app, ["evaluate", "--synthetic", str(syn),
                                   "--out", str(tmp_path / "out")])
    assert res.exit_code == 2 and "give --real-test" in said(res.output)
    res = CliRunner().invoke(app, ["evaluate", "--synthetic", str(syn), "--coref-gold",
                                   str(tmp_path), "--out", str(tmp_path / "out")])
    assert res.exit_code == 2 and "no gold coreference documents" in said(res.output)
