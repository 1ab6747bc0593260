"""``dptext keyphrases`` end to end through the CLI, and its handling of bad input."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from dptext.cli import app
from dptext.corpus import read_corpus


@pytest.fixture(scope="module")
def small_csv(tmp_path_factory):
    train = read_corpus("demo:bbc-news/train")
    df = pd.DataFrame({"text": train.texts, "label": train.labels}).groupby("label").head(60)
    path = tmp_path_factory.mktemp("cli") / "notes.csv"
    df.to_csv(path, index=False)
    return path


@pytest.mark.slow
def test_keyphrases_command_writes_sequences_and_report(small_csv, tmp_path):
    out = tmp_path / "seq.jsonl"
    result = CliRunner().invoke(app, [
        "keyphrases", "--input", str(small_csv), "--label-column", "label",
        "--vocab", "english:20000", "--epsilon-vocab", "4", "--epsilon-kde", "5",
        "--features", "300", "--length", "5", "--sequences-per-class", "7",
        "--method", "iterative", "--model", "kde", "--select", "none",
        "--out", str(out), "--seed", "3"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 35 and {x["label"] for x in lines} == {
        "business", "entertainment", "politics", "sports", "tech"}
    assert all(set(x) == {"label", "keyphrases"} for x in lines)
    report = json.loads((tmp_path / "seq.privacy.json").read_text())
    assert report["guarantee"]["epsilon"] <= 9.0 + 1e-9
    assert report["guarantee"]["delta"] == pytest.approx(1e-5)
    names = [r["name"] for r in report["releases"]]
    assert names[0].startswith("vocabulary histogram") and names.count("KDE sketch sums") == 5
    assert all(r["neighbouring"] == "add/remove one document" for r in report["releases"])
    assert "Guarantee of this run" in result.output
    # the report holds released data and parameters only: no document text
    text = (tmp_path / "seq.privacy.json").read_text()
    first_doc = pd.read_csv(small_csv)["text"].iloc[0]
    assert first_doc[:40] not in text


@pytest.mark.slow
def test_keyphrases_defaults_select_the_model_privately_and_report_it(small_csv, tmp_path):
    out = tmp_path / "seq.jsonl"
    result = CliRunner().invoke(app, [
        "keyphrases", "--input", str(small_csv), "--text-column", "text",
        "--label-column", "label", "--epsilon", "6", "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "seq.privacy.json").read_text())
    by_name = {r["name"].split(" (")[0]: r for r in report["releases"]}
    sel = by_name["model selection"]
    assert sel["mechanism"] == "report-noisy-max" and sel["fold"] == "validation"
    assert by_name["class × term histogram"]["fold"] == "fit"
    assert "vocabulary histogram" not in by_name  # the histogram gives the vocabulary
    assert report["guarantee"]["epsilon"] <= 6.0 + 1e-6
    assert "parallel" in report["guarantee"]["method"]
    chosen = report["parameters"]["model_selection"]
    assert chosen["selected"] and chosen["chosen"] in chosen["candidates"]
    assert "chosen privately" in " ".join(result.output.split())  # wrapping-proof
    assert len(out.read_text().splitlines()) == 5 * 1000


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    p = tmp_path / "n.csv"
    pd.DataFrame({"note": ["x"]}).to_csv(p, index=False)
    result = CliRunner().invoke(app, ["keyphrases", "--input", str(p), "--out",
                                      str(tmp_path / "o.jsonl")])
    assert result.exit_code == 2
    assert "error:" in result.output and "no column 'text'" in result.output
    assert "Traceback" not in result.output


def test_bad_epsilon_is_exit_2(small_csv, tmp_path):
    result = CliRunner().invoke(app, ["keyphrases", "--input", str(small_csv), "--label-column",
                                      "label", "--epsilon-kde", "0", "--out",
                                      str(tmp_path / "o.jsonl")])
    assert result.exit_code == 2 and "epsilon_kde must be a positive" in result.output
