"""The release folder a recipient loads: documents (Parquet = JSONL), privacy.json, and a
dataset card that states the guarantee; ``dptext evaluate --publish-evaluation`` adds its
numbers to it, marked as outside the guarantee (without it, nothing)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

import dptext.evaluate._shared as shared
from cli_output import said
from dptext.cli import app
from dptext.privacy import NoiseSpec, PrivacyLedger, Sensitivity, release
from dptext.privacy.budget import planned_run
from dptext.privacy_report import build_report
from dptext.run.release import (
    ON_PRIVATE,
    add_evaluation,
    release_dir_for,
    size_category,
    write_release,
)
from eval_helpers import HashEncoder, toy_corpus

RECORDS = [
    {"text": "The match ended with a late goal.", "label": "sport",
     "keyphrases": ["match", "late goal"], "coverage": 1.0},
    {"text": "A new chip | faster phones.", "label": "tech",
     "keyphrases": ["chip", "phones"], "coverage": 0.5},
    {"text": "The coach praised the team.", "label": "sport",
     "keyphrases": ["coach"], "coverage": 1.0},
]


def _report(epsilon: float = 2.0) -> dict:
    ledger = PrivacyLedger()
    if math.isinf(epsilon):
        ledger.record(planned_run("dpft run", math.inf, 0.0))
    else:
        release(np.array([2.0, 1.0]), Sensitivity(l1=1.0, l2=1.0, reason="one document, one "
                                                  "label"),
                NoiseSpec("laplace", epsilon / 2), ledger=ledger, name="label histogram")
        release(np.zeros(4), Sensitivity(l1=2.0, l2=1.0, reason="unit-norm embedding"),
                NoiseSpec("gaussian", epsilon / 2, 1e-6), ledger=ledger, name="KDE sketch",
                partition="class=sport", parallel_group="kde")
    return build_report(ledger, command="generate",
                        parameters={"epsilon": epsilon, "terms_per_doc": 5,
                                    "config": {"model": "hist", "labels": ["sport", "tech"]},
                                    "few_shot": None})


def _front_matter(card: str) -> dict:
    assert card.startswith("---\n")
    return yaml.safe_load(card.split("---\n")[1])


def test_release_folder_loads_and_states_the_guarantee(tmp_path, offline_datasets):
    report = _report()
    folder = write_release(tmp_path / "synthetic.jsonl", RECORDS, report, method="kps",
                           document_type="news article")
    assert folder == release_dir_for(tmp_path / "synthetic.jsonl") == \
        tmp_path / "synthetic.release"
    assert sorted(p.name for p in folder.iterdir()) == [
        "README.md", "documents.jsonl", "documents.parquet", "privacy.json"]

    lines = [json.loads(x) for x in (folder / "documents.jsonl").read_text().splitlines()]
    assert lines == RECORDS
    df = pd.read_parquet(folder / "documents.parquet")
    assert list(df.columns) == ["text", "label", "keyphrases", "coverage"]
    assert df["text"].tolist() == [r["text"] for r in RECORDS]
    assert [list(k) for k in df["keyphrases"]] == [r["keyphrases"] for r in RECORDS]
    ds = offline_datasets.load_dataset("parquet", data_files=str(folder / "documents.parquet"),
                                       split="train", cache_dir=str(tmp_path / "hf-cache"))
    assert ds.num_rows == len(lines) and ds["text"] == df["text"].tolist()
    assert ds.features["keyphrases"].feature.dtype == "string"

    assert json.loads((folder / "privacy.json").read_text()) == \
        json.loads(json.dumps(report, default=str))

    card = (folder / "README.md").read_text()
    meta = _front_matter(card)
    assert meta["language"] == ["en"] and meta["license"] == "other"
    assert meta["task_categories"] == ["text-classification"]
    assert meta["size_categories"] == ["n<1K"]
    assert meta["tags"] == ["synthetic", "differential-privacy", "dptext"]
    assert "news article" in meta["pretty_name"]
    assert meta["configs"] == [{"config_name": "default", "data_files": "documents.parquet"}]
    g = report["guarantee"]
    assert f"ε = {g['epsilon']:.4g}" in card and f"δ = {g['delta']:.3g}" in card
    assert "one whole document added or removed" in card
    for r in report["releases"]:
        assert r["name"] in card
    assert "KDE sketch [class=sport]" in card
    for a in report["assumptions"]:
        assert f"- {a}" in card
    assert "| sport | 2 |" in card and "| tech | 1 |" in card  # synthetic label counts
    assert "`terms_per_doc`: 5" in card and "`config.model`: hist" in card
    assert "NOT PRIVATE" not in card and "## Evaluation" not in card
    assert 'load_dataset("parquet", data_files="documents.parquet"' in card


def test_unlabelled_records_are_a_text_generation_set(tmp_path):
    folder = write_release(tmp_path / "out.jsonl", [{"text": "a | b"}, {"text": "c"}],
                           _report(), method="augpe")
    meta = _front_matter((folder / "README.md").read_text())
    assert meta["task_categories"] == ["text-generation"]
    assert list(pd.read_parquet(folder / "documents.parquet").columns) == ["text"]


def test_mixed_field_is_kept_as_json_text(tmp_path):
    recs = [{"text": "a", "label": "x"}, {"text": "b", "label": ["x", "y"]}]
    folder = write_release(tmp_path / "out.jsonl", recs, _report(), method="pate")
    df = pd.read_parquet(folder / "documents.parquet")
    assert df["label"].tolist() == ['"x"', '["x", "y"]']
    assert "| x | 2 |" in (folder / "README.md").read_text()


def test_infinite_epsilon_is_not_private(tmp_path):
    report = _report(math.inf)
    assert report["guarantee"]["epsilon"] == math.inf
    folder = write_release(tmp_path / "out.jsonl", RECORDS, report, method="dpft")
    card = (folder / "README.md").read_text()
    assert card.count("NOT PRIVATE") >= 2  # on top and in the Privacy section
    assert json.loads((folder / "privacy.json").read_text())["guarantee"]["epsilon"] == math.inf


def test_add_evaluation_adds_a_section_and_keeps_the_rest(tmp_path):
    folder = write_release(tmp_path / "out.jsonl", RECORDS, _report(), method="kps")
    before = (folder / "README.md").read_text()
    summary = {"real test documents": 40,
               "Utility: TF-IDF": {"accuracy, trained on synthetic": 0.8125,
                                   "ratio to the ceiling": float("nan")},
               "Leakage": {"planted canaries found": "0 of 2"}}
    path = add_evaluation(folder, summary)
    assert path == folder / "evaluation.json"
    assert json.loads(path.read_text())["Utility: TF-IDF"]["ratio to the ceiling"] is None
    after = (folder / "README.md").read_text()
    assert "## Evaluation" in after and "- **real test documents**: 40" in after
    assert "  - accuracy, trained on synthetic: 0.8125" in after
    assert "  - planted canaries found: 0 of 2" in after
    # everything else is as before: the new section sits before "How to load"
    head, tail = before.split("## How to load")
    assert after.startswith(head) and after.endswith("## How to load" + tail)
    add_evaluation(folder, {"real test documents": 41})  # a second evaluation replaces it
    again = (folder / "README.md").read_text()
    assert again.count("## Evaluation") == 1 and "**: 41" in again and "Leakage" not in again


@pytest.mark.parametrize(("n", "bucket"), [(0, "n<1K"), (999, "n<1K"), (1000, "1K<n<10K"),
                                           (54_321, "10K<n<100K"), (100_000, "100K<n<1M"),
                                           (3_000_000, "1M<n<10M"), (10**13, "n>1T")])
def test_size_categories(n, bucket):
    assert size_category(n) == bucket


def _evaluate_on_release(tmp_path, monkeypatch, *extra: str):
    """``dptext evaluate`` on ``<release>/documents.jsonl`` (tf-idf only, a hashing encoder:
    no model is loaded); returns the release folder, the card before, and the result."""
    monkeypatch.setattr(shared, "get_encoder", lambda name="minilm": HashEncoder())
    syn, test, private = toy_corpus(10, 0), toy_corpus(6, 1), toy_corpus(10, 2)
    recs = [{"text": t, "label": lab} for t, lab in zip(syn.texts, syn.labels, strict=True)]
    folder = write_release(tmp_path / "synthetic.jsonl", recs, _report(), method="kps")
    card = (folder / "README.md").read_text()
    for name, data in (("test.csv", test), ("private.csv", private)):
        pd.DataFrame({"text": data.texts, "label": data.labels}).to_csv(tmp_path / name)
    (tmp_path / "canaries.txt").write_text("zebra quantum marmalade\n")
    res = CliRunner().invoke(app, [
        "evaluate", "--synthetic", str(folder / "documents.jsonl"),
        "--real-test", str(tmp_path / "test.csv"), "--private", str(tmp_path / "private.csv"),
        "--classifiers", "tfidf", "--no-ner",
        "--no-fidelity", "--no-coherence", "--canaries", str(tmp_path / "canaries.txt"),
        *extra])
    return folder, card, res


def test_evaluate_leaves_the_release_folder_alone(tmp_path, monkeypatch):
    """Issue #56: the evaluation reads the private corpus (a ceiling trained on it, copied
    n-grams, canaries): a membership test for whoever holds the release. It stays in
    --out, and its figures are not printed."""
    folder, card, res = _evaluate_on_release(tmp_path, monkeypatch, "--out",
                                             str(tmp_path / "eval"))
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in folder.iterdir()) == [
        "README.md", "documents.jsonl", "documents.parquet", "privacy.json"]
    assert (folder / "README.md").read_text() == card
    assert (tmp_path / "eval" / "metrics.json").is_file()
    assert "--publish-evaluation" in said(res.output)
    assert "accuracy" not in res.output and "canar" not in res.output  # no figure printed


def test_evaluate_out_inside_the_release_folder_is_refused(tmp_path, monkeypatch):
    folder, card, res = _evaluate_on_release(tmp_path, monkeypatch, "--out",
                                             str(tmp_path / "synthetic.release" / "eval"))
    assert res.exit_code == 2 and "inside the release folder" in said(res.output)
    assert not (folder / "eval").exists() and (folder / "README.md").read_text() == card


def test_publish_evaluation_adds_its_numbers_marked_outside_the_guarantee(tmp_path,
                                                                          monkeypatch):
    folder, _, res = _evaluate_on_release(tmp_path, monkeypatch, "--out",
                                          str(tmp_path / "eval"), "--publish-evaluation")
    assert res.exit_code == 0, res.output
    summary = json.loads((folder / "evaluation.json").read_text())
    util = summary["Utility: TF-IDF + logistic regression"]
    assert 0 <= util["accuracy, trained on synthetic"] <= 1
    assert "macro-F1, trained on synthetic" in util
    assert not any("private" in k or "ceiling" in k for k in util)
    on_private = summary[ON_PRIVATE]  # every figure that read the private corpus, marked
    assert "TF-IDF + logistic regression: accuracy, trained on the private corpus " \
           "(ceiling)" in on_private
    assert "TF-IDF + logistic regression: ratio to the ceiling" in on_private
    assert on_private["Leakage: planted canaries found"] == "0 of 1"
    assert "Leakage: 7-word sequences copied from the private corpus" in on_private
    assert summary["real test documents"] == 18
    card = " ".join((folder / "README.md").read_text().split())
    assert "## Evaluation" in card and "Not covered by the privacy guarantee" in card
    assert f"**{ON_PRIVATE}**" in card
    assert "Leakage: planted canaries found: 0 of 1" in card
