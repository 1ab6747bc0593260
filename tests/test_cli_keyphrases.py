"""``dptext keyphrases`` end to end through the CLI, and its handling of bad input."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
from typer.testing import CliRunner

from cli_output import said
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
        "--sequence-method", "iterative", "--model", "kde", "--select", "none",
        "--out", str(out), "--seed", "3"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 35 and {x["label"] for x in lines} == {
        "business", "entertainment", "politics", "sports", "tech"}
    assert all(set(x) == {"label", "keyphrases"} for x in lines)
    report = json.loads((tmp_path / "seq.privacy.json").read_text())
    assert report["guarantee"]["epsilon"] <= 1.0 + 9.0 + 1e-9  # + the DP label set
    assert 0.9e-5 <= report["guarantee"]["delta"] <= 1e-5
    names = [r["name"] for r in report["releases"]]
    assert names[:2] == ["label set", "vocabulary histogram (english:20000)"]
    assert names.count("KDE sketch sums") == 5
    assert any("partition selection" in a for a in report["assumptions"])
    assert report["budget"]["key"] == "content fingerprint"
    assert "content fingerprint" in " ".join(result.output.split())
    assert all(r["neighbouring"] == "add/remove one document" for r in report["releases"])
    assert "Guarantee of this run" in said(result.output)
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
    # shared selection: no fold, its own 5 % of the total ε, composed with the rest
    assert sel["mechanism"] == "report-noisy-max" and sel["fold"] is None
    assert sel["epsilon"] == pytest.approx(0.05 * 6.0)
    assert by_name["class × term histogram"]["fold"] is None
    assert "vocabulary histogram" not in by_name  # the histogram gives the vocabulary
    assert report["guarantee"]["epsilon"] <= 6.0 + 1e-6
    chosen = report["parameters"]["model_selection"]
    assert chosen["split"] == "shared"
    assert chosen["selected"] and chosen["chosen"] in chosen["candidates"]
    assert "chosen privately" in " ".join(result.output.split())  # wrapping-proof
    assert len(out.read_text().splitlines()) == 5 * 1000


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    p = tmp_path / "n.csv"
    pd.DataFrame({"note": ["x"]}).to_csv(p, index=False)
    result = CliRunner().invoke(app, ["keyphrases", "--input", str(p), "--out",
                                      str(tmp_path / "o.jsonl")])
    assert result.exit_code == 2
    assert "error:" in result.output and "no column 'text'" in said(result.output)
    assert "Traceback" not in result.output


def test_bad_epsilon_is_exit_2(small_csv, tmp_path):
    result = CliRunner().invoke(app, ["keyphrases", "--input", str(small_csv), "--label-column",
                                      "label", "--epsilon-kde", "0", "--out",
                                      str(tmp_path / "o.jsonl")])
    assert result.exit_code == 2 and "epsilon_kde must be a positive" in said(result.output)


@pytest.fixture(scope="module")
def csv_with_a_two_document_class(small_csv, tmp_path_factory):
    df = pd.read_csv(small_csv)
    rare = pd.DataFrame({"text": ["the rare ward reopened after the audit of its records",
                                  "a second note about the rare ward and its records"],
                         "label": ["rareward", "rareward"]})
    path = tmp_path_factory.mktemp("cli2") / "notes.csv"
    pd.concat([df, rare]).to_csv(path, index=False)
    return path


@pytest.mark.slow
def test_defaults_run_on_a_two_document_class_without_refusal_or_exact_count(
        csv_with_a_two_document_class, tmp_path):
    """Finding 1: with its defaults ``dptext keyphrases`` neither refuses nor says how
    many documents a class holds; the two-document class falls below the DP label set's
    threshold (released in the report as "label set") and is left out."""
    out = tmp_path / "seq.jsonl"
    result = CliRunner().invoke(app, [
        "keyphrases", "--input", str(csv_with_a_two_document_class), "--label-column", "label",
        "--sequences-per-class", "3", "--out", str(out)])
    assert result.exit_code == 0, result.output
    text = said(result.output)
    # no class size: neither the small class's 2 nor a large class's 60; nor the corpus
    # size, which no run prints, terminal or not (`dptext inspect` shows it)
    assert not re.search(r"(?<![\d.])(2|60) documents", text), text
    n = len(pd.read_csv(csv_with_a_two_document_class))
    assert f"{n} documents" not in text and str(n) not in text.split("read ")[1][:80], text
    assert "too small" not in text and "refuse" not in text and "error" not in text
    labels = {json.loads(x)["label"] for x in out.read_text().splitlines()}
    assert labels == {"business", "entertainment", "politics", "sports", "tech"}
    report = json.loads((tmp_path / "seq.privacy.json").read_text())
    assert report["releases"][0]["name"] == "label set"
    assert "rareward" not in (tmp_path / "seq.privacy.json").read_text()
    assert "label set" in text  # the terminal table lists it too
    gone = CliRunner().invoke(app, ["keyphrases", "--input", str(csv_with_a_two_document_class),
                                    "--allow-noisy-classes", "--out", str(out)])
    assert gone.exit_code == 2 and "No such option" in gone.output  # it meant nothing now


def test_private_label_values_reach_no_stream_only_dptext_inspect(small_csv, tmp_path, monkeypatch):
    """Finding 9, issue #56: an undeclared label in the data is named by no run, neither
    in a redirected stream nor on a terminal (FORCE_COLOR, TTY_COMPATIBLE or a
    pseudo-terminal make a logged stream one), nor in any file of the run; ``dptext
    inspect`` names it to the curator who asks."""
    from dptext.cli.options import console

    data = tmp_path / "in" / "notes.csv"
    data.parent.mkdir()
    df = pd.read_csv(small_csv).head(20)
    df.loc[0, "label"] = "Zebulon-ward"
    df.to_csv(data, index=False)
    runs = tmp_path / "runs"
    args = ["--input", str(data), "--label-column", "label",
            "--labels", "business,entertainment,politics,sports,tech"]
    for cmd in (["keyphrases", *args, "--out", str(runs / "k.jsonl")],
                ["generate", *args, "--llm", "recording:", "--no-progress",
                 "--out", str(runs / "g.jsonl")]):
        res = CliRunner().invoke(app, cmd)
        assert res.exit_code == 2, res.output
        assert "not among the declared labels" in res.output
        assert "Zebulon" not in res.output  # not a terminal: what a log would hold
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p != data]
    assert not any("Zebulon" in p.read_text(errors="replace") for p in written)
    monkeypatch.setattr(console, "_force_terminal", True)
    res = CliRunner().invoke(app, ["keyphrases", *args, "--out", str(runs / "k.jsonl")])
    assert res.exit_code == 2 and "Zebulon" not in res.output  # a terminal may be logged
    assert "dptext inspect" in " ".join(res.output.split())
    res = CliRunner().invoke(app, ["inspect", *args])
    assert res.exit_code == 0 and "Zebulon-ward" in res.output  # asked for
