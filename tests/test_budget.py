"""Persistent per-corpus privacy ledger: runs add up, a run past the total is refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from cli_output import said
from dptext.cli import app
from dptext.privacy import BudgetExceededError, NoiseSpec, PrivacyLedger, Sensitivity, release
from dptext.privacy.budget import (
    CorpusBudget,
    configured_dataset_id,
    corpus_fingerprint,
    open_budget,
    state_dir,
)

SECRET_TEXT = "patient Zebulon Quartermaine has a rare condition"


def _ledger(eps: float, group: str | None = None) -> PrivacyLedger:
    ledger = PrivacyLedger()
    for part in ("a", "b") if group else (None,):
        release(np.zeros(3), Sensitivity(1, 1, "t"), NoiseSpec("laplace", eps), ledger=ledger,
                name="x", partition=part, parallel_group=group)
    return ledger


def test_state_dir_from_env(_dptext_home, monkeypatch):
    assert state_dir() == _dptext_home
    monkeypatch.delenv("DPTEXT_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", "/x")
    assert state_dir() == Path("/x/dptext")


def test_fingerprint_is_order_independent_and_label_sensitive():
    texts, labels = ["a b", "c d", "e"], ["x", "y", "x"]
    f = corpus_fingerprint(texts, labels)
    assert f == corpus_fingerprint(texts[::-1], labels[::-1])
    assert f != corpus_fingerprint(texts, ["x", "y", "y"])
    assert f != corpus_fingerprint(texts, None)
    assert f != corpus_fingerprint([*texts, "f"], [*labels, "x"])
    assert f != corpus_fingerprint(["a", "b c", "c d", "e"][1:], labels)  # no concatenation
    assert len(f) == 64


def test_runs_add_up_and_refusal_then_override(_dptext_home):
    fp = corpus_fingerprint([SECRET_TEXT], None)
    b = CorpusBudget.open(fp, total=3.0)
    b.check(1.0)
    assert b.commit(_ledger(1.0), command="t").epsilon == pytest.approx(1.0)
    # parallel groups are parallel only within a run: two runs on the same classes add up
    b = CorpusBudget.open(fp)
    assert b.total == 3.0  # recorded for the corpus
    assert b.commit(_ledger(1.0, group="kde"), command="t").epsilon == pytest.approx(2.0)
    b = CorpusBudget.open(fp)
    with pytest.raises(BudgetExceededError, match=r"spent ε = 2.*total of ε = 3"):
        b.check(1.5)
    with pytest.raises(BudgetExceededError, match="allow-budget-overrun"):
        b.commit(_ledger(1.5), command="t")
    assert len(CorpusBudget.open(fp).runs) == 2  # the refused run left no trace
    b.check(1.5, allow_overrun=True)
    after = b.commit(_ledger(1.5), command="t", allow_overrun=True)
    assert after.epsilon == pytest.approx(3.5)
    again = CorpusBudget.open(fp)
    assert [r["overrun"] for r in again.runs] == [False, False, True]
    assert again.spent().epsilon == pytest.approx(3.5)
    raw = (_dptext_home / "ledgers" / f"{again.keyed_fingerprint}.json").read_text()
    assert "Zebulon" not in raw and again.keyed_fingerprint in raw and fp not in raw


def test_same_run_committed_once(_dptext_home):
    b = CorpusBudget.open("f" * 64)
    b.commit(_ledger(1.0), command="t", run_id="r1")
    b.commit(_ledger(1.0), command="t", run_id="r1")
    assert CorpusBudget.open("f" * 64).spent().epsilon == pytest.approx(1.0)


def test_config_file_total_and_bad_values(_dptext_home):
    (_dptext_home / "config.toml").write_text("budget_total = 2.5\n")
    b = CorpusBudget.open("a" * 64)
    assert b.total == 2.5 and b.total_source == "config.toml"
    with pytest.raises(BudgetExceededError):
        b.check(3.0)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="positive finite"):
            CorpusBudget.open("a" * 64, total=bad)
    (_dptext_home / "config.toml").write_text("budget_total = 'lots'\n")
    with pytest.raises(ValueError, match="budget_total"):
        CorpusBudget.open("a" * 64)
    (_dptext_home / "config.toml").write_text("budget_total = [\n")
    with pytest.raises(ValueError, match="TOML"):
        CorpusBudget.open("a" * 64)


def test_corrupt_ledger_is_refused_not_reset(_dptext_home):
    path = _dptext_home / "ledgers" / f"{'b' * 64}.json"
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    with pytest.raises(ValueError, match="unreadable"):
        CorpusBudget.open("b" * 64)


def test_concurrent_commits_are_all_recorded(_dptext_home, tmp_path):
    code = ("import numpy as np\n"
            "from dptext.privacy import *\n"
            "from dptext.privacy.budget import CorpusBudget\n"
            "l = PrivacyLedger()\n"
            "release(np.zeros(2), Sensitivity(1,1,'t'), NoiseSpec('laplace', 0.5), ledger=l,"
            " name='x')\n"
            "CorpusBudget.open('c'*64).commit(l, command='t')\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env) for _ in range(3)]
    assert [p.wait(timeout=120) for p in procs] == [0] * 3
    assert CorpusBudget.open("c" * 64).spent().epsilon == pytest.approx(1.5)


def test_planned_releases_compose_like_the_fit_will():
    from dptext.generators.kps import KeyphraseSeeder
    from dptext.privacy import compose

    declared = ("a", "b")  # a declared label set costs nothing
    kde = dict(model="kde", select="none")
    g = compose(KeyphraseSeeder(epsilon_vocab=1.0, epsilon_kde=5.0, labels=declared,
                                vocab_noise="laplace", **kde).planned_releases())
    assert g.epsilon == pytest.approx(6.0) and g.delta == pytest.approx(1e-5)
    assert compose(KeyphraseSeeder(epsilon_vocab=1.0, epsilon_kde=5.0, vocab_noise="laplace",
                                   **kde).planned_releases(labelled=False)) == g  # unlabelled
    # undeclared labels: the DP label set is planned too (Laplace: ε, and half of δ for its
    # threshold; the Gaussian sketches keep the other half)
    undeclared = KeyphraseSeeder(epsilon_vocab=1.0, epsilon_kde=5.0, epsilon_label_set=0.5,
                                 vocab_noise="laplace", **kde).planned_releases()
    assert undeclared[0].name == "label set"
    assert undeclared[0].threshold_delta == pytest.approx(5e-6)
    g = compose(undeclared)
    assert g.epsilon == pytest.approx(6.5) and g.delta == pytest.approx(1e-5)
    # two Gaussian stages compose through their PLDs: less than the sum
    both = compose(KeyphraseSeeder(epsilon_vocab=1.0, epsilon_kde=5.0, labels=declared, **kde)
                   .planned_releases())
    assert 4.9 < both.epsilon < 5.1
    # the default: one histogram on the fit fold, the selection on the other, in parallel
    default = compose(KeyphraseSeeder(epsilon=6.0).planned_releases())
    assert default.epsilon == pytest.approx(6.0, rel=1e-3) and default.delta == \
        pytest.approx(1e-5)
    b = CorpusBudget.open("d" * 64, total=11.0)
    b.commit(_ledger(1.0), command="t")
    planned = KeyphraseSeeder(epsilon_vocab=1.0, epsilon_kde=5.0, epsilon_labels=0.5,
                              labels=declared, vocab_noise="laplace")
    b.check(planned.planned_releases())  # 1 + 6.5 <= 11
    b.commit(_ledger(4.0), command="t")
    with pytest.raises(BudgetExceededError, match="on its own"):
        b.check(planned.planned_releases())


@pytest.fixture(scope="module")
def small_csv(tmp_path_factory):
    from dptext.corpus import read_corpus

    train = read_corpus("demo:bbc-news/train")
    idx = np.random.default_rng(0).choice(len(train), 120, replace=False)
    path = tmp_path_factory.mktemp("corpus") / "c.csv"
    import pandas as pd

    pd.DataFrame({"text": [train.texts[i] for i in idx],
                  "label": [train.labels[i] for i in idx]}).to_csv(path, index=False)
    return path


FAST = ["--vocab", "english:2000", "--features", "50", "--vocab-size", "200", "--length", "3",
        "--sequence-method", "independent", "--sequences-per-class", "2",
        "--labels", "business,entertainment,politics,sports,tech",
        "--epsilon-vocab", "1", "--epsilon-kde", "2", "--kde-noise", "laplace",
        "--vocab-noise", "laplace",
        "--label-column", "label", "--seed", "0"]


@pytest.mark.slow
def test_keyphrases_cli_spends_across_runs_and_refuses(small_csv, tmp_path, _dptext_home):
    runner = CliRunner()
    args = ["keyphrases", "-i", str(small_csv), *FAST, "--budget-total", "7"]
    r1 = runner.invoke(app, [*args, "-o", str(tmp_path / "a.jsonl")])
    assert r1.exit_code == 0, r1.output
    r2 = runner.invoke(app, [*args[:-2], "-o", str(tmp_path / "b.jsonl")])
    assert r2.exit_code == 0, r2.output
    assert "1 earlier run(s)" in said(r2.output)
    r3 = runner.invoke(app, [*args[:-2], "-o", str(tmp_path / "c.jsonl")])
    assert r3.exit_code == 2
    assert "privacy budget exceeded" in said(r3.output) and "Traceback" not in r3.output
    assert not (tmp_path / "c.jsonl").exists()  # refused before anything was written
    r4 = runner.invoke(app, [*args[:-2], "--allow-budget-overrun", "-o",
                             str(tmp_path / "d.jsonl")])
    assert r4.exit_code == 0, r4.output
    (ledger,) = (_dptext_home / "ledgers").glob("*.json")
    data = json.loads(ledger.read_text())
    assert [r["overrun"] for r in data["runs"]] == [False, False, True]
    assert data["spent"]["epsilon"] == pytest.approx(9.0)
    shown = runner.invoke(app, ["budget", "-i", str(small_csv), "--label-column", "label"])
    assert shown.exit_code == 0 and "ε = 9" in shown.output


def test_generate_is_refused_before_the_fit_when_the_budget_is_spent(tmp_path):
    from dptext.corpus import read_corpus

    path = tmp_path / "c.csv"
    path.write_text("text,label\nfootball match,sport\nbank profit,business\n")
    corpus = read_corpus(path, label_column="label")
    b = CorpusBudget.open(corpus_fingerprint(corpus.texts, corpus.labels), total=4.0)
    b.commit(_ledger(1.0), command="keyphrases")
    out = tmp_path / "o.jsonl"
    res = CliRunner().invoke(app, ["generate", "-i", str(path), "--label-column", "label",
                                   "-o", str(out), "--llm", "recording:", "--no-progress"])
    assert res.exit_code == 2 and "privacy budget exceeded" in said(res.output)
    assert not out.exists() and not (tmp_path / "o.jsonl.run").exists()
    assert len(CorpusBudget.open(corpus_fingerprint(corpus.texts, corpus.labels)).runs) == 1


# ------------------------------------------------------------------ dataset ids
def _corpus(n: int):
    from dptext.corpus import Corpus

    return Corpus(tuple(f"note {i} about {SECRET_TEXT}" for i in range(n)),
                  tuple("ab"[i % 2] for i in range(n)))


def test_dataset_id_keeps_one_ledger_across_versions_of_the_corpus(_dptext_home):
    v1, v2 = _corpus(10), _corpus(11)  # one document added: another content fingerprint
    by_content = open_budget(v1, total=3.0)
    assert by_content.key == "content fingerprint"
    by_content.commit(_ledger(1.0), command="t")
    assert open_budget(v2).runs == []  # a fresh, empty ledger: the weakness
    b = open_budget(v1, dataset_id="ward-notes", total=3.0)
    assert b.key == "dataset id" and b.path.name == "dataset-ward-notes.json"
    b.commit(_ledger(2.0), command="t")
    again = open_budget(v2, dataset_id="ward-notes")  # the new version: the same ledger
    assert again.total == 3.0 and len(again.runs) == 1
    with pytest.raises(BudgetExceededError, match="dataset 'ward-notes'"):
        again.check(1.5)
    again.commit(_ledger(0.5), command="t")
    data = json.loads(again.path.read_text())
    assert data["key"] == "dataset id" and data["dataset_id"] == "ward-notes"
    assert data["keyed_fingerprint"] is None and data["spent"]["epsilon"] == pytest.approx(2.5)
    assert [r["keyed_fingerprint"] for r in data["runs"]] == [b.keyed_fingerprint,
                                                              again.keyed_fingerprint]
    assert "Zebulon" not in again.path.read_text()
    # the report names the key, never a fingerprint (a hash of the private corpus)
    entry = again.report_entry()
    assert entry["key"] == "dataset id" and entry["dataset_id"] == "ward-notes"
    assert again.keyed_fingerprint not in json.dumps(entry)
    assert "fingerprint" not in json.dumps(by_content.report_entry()).replace(
        "content fingerprint", "")
    for bad in ("", "../x", "a b", "x" * 101, "-x"):
        with pytest.raises(ValueError, match="dataset-id"):
            open_budget(v1, dataset_id=bad)


def test_dataset_id_from_the_config_file(_dptext_home, tmp_path):
    data = tmp_path / "notes.csv"
    data.write_text("text\nx\n")
    (_dptext_home / "config.toml").write_text(
        'dataset_id = "everything"\n[datasets]\n'
        f'"{data}" = "ward-notes"\n"demo:bbc-news/train" = "bbc"\n')
    assert configured_dataset_id(str(data)) == "ward-notes"
    assert configured_dataset_id("demo:bbc-news/train") == "bbc"
    assert configured_dataset_id("other.csv") == "everything"  # the fallback
    b = open_budget(_corpus(4), input=str(data))
    assert b.dataset_id == "ward-notes" and b.key_source == "config.toml"
    assert open_budget(_corpus(4), dataset_id="cli", input=str(data)).dataset_id == "cli"
    (_dptext_home / "config.toml").write_text('dataset_id = "no/slash"\n')
    with pytest.raises(ValueError, match="dataset_id"):
        open_budget(_corpus(4))


def test_generate_with_a_dataset_id_is_refused_on_a_new_version(tmp_path, _dptext_home):
    from dptext.corpus import read_corpus

    path = tmp_path / "c.csv"
    path.write_text("text,label\nfootball match,sport\nbank profit,business\n")
    b = open_budget(read_corpus(path, label_column="label"), dataset_id="news", total=4.0)
    b.commit(_ledger(1.0), command="keyphrases")
    path.write_text("text,label\nfootball match,sport\nbank profit,business\ntypo fixed,sport\n")
    out = tmp_path / "o.jsonl"
    res = CliRunner().invoke(app, ["generate", "-i", str(path), "--label-column", "label",
                                   "-o", str(out), "--llm", "recording:", "--no-progress",
                                   "--dataset-id", "news"])
    said = " ".join(res.output.split())
    assert res.exit_code == 2 and "privacy budget exceeded for dataset 'news'" in said
    assert not out.exists()
    # without the id, the edited corpus is a new one: the same run would go ahead
    res = CliRunner().invoke(app, ["budget", "-i", str(path), "--label-column", "label"])
    assert res.exit_code == 0 and "content" in res.output and "no total budget" in res.output
    res = CliRunner().invoke(app, ["budget", "-i", str(path), "--label-column", "label",
                                   "--dataset-id", "news"])
    assert res.exit_code == 0 and "ε = 1" in res.output and "dataset id 'news'" in res.output


# ------------------------------------------------------------------ the salted key
def _v1_ledger(home: Path, name: str, fingerprint: str | None, runs: list[dict],
               dataset_id: str | None = None) -> Path:
    """A ledger as dptext wrote it before the salt: named by, and recording, unsalted
    fingerprints (format 1)."""
    path = home / "ledgers" / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({
        "format": 1, "key": "dataset id" if dataset_id else "content fingerprint",
        "fingerprint": fingerprint, "dataset_id": dataset_id, "budget_total": 5.0,
        "spent": {}, "runs": runs}))
    return path


def _v1_run(run_id: str, fingerprint: str, eps: float) -> dict:
    from dataclasses import asdict

    ledger = _ledger(eps)
    return {"run_id": run_id, "command": "keyphrases", "created": "2026-01-01T00:00:00+00:00",
            "fingerprint": fingerprint, "releases": [asdict(r) for r in ledger.releases],
            "guarantee": asdict(ledger.guarantee()), "parameters": {}, "overrun": False}


def test_the_ledger_key_is_salted_per_installation(_dptext_home, tmp_path):
    corpus = _corpus(6)
    fp = corpus_fingerprint(corpus.texts, corpus.labels)
    b = open_budget(corpus)
    salt = _dptext_home / "ledgers" / "salt"
    assert salt.is_file() and salt.stat().st_mode & 0o777 == 0o600
    assert b.keyed_fingerprint != fp and b.path.name == f"{b.keyed_fingerprint}.json"
    b.commit(_ledger(1.0), command="t")
    stored = b.path.read_text()
    assert fp not in stored and fp[:8] not in stored  # the unsalted hash is stored nowhere
    assert open_budget(corpus).keyed_fingerprint == b.keyed_fingerprint  # stable
    other = open_budget(corpus, home=tmp_path / "elsewhere")  # another installation
    assert other.keyed_fingerprint != b.keyed_fingerprint
    # a lost salt is not silently replaced while ledgers keyed by it exist
    salt.unlink()
    with pytest.raises(ValueError, match=r"salt .* is missing, but ledgers keyed by it exist"):
        open_budget(corpus)


def test_no_message_names_the_unsalted_fingerprint(small_csv, tmp_path, _dptext_home):
    from dptext.corpus import read_corpus

    corpus = read_corpus(small_csv, label_column="label")
    fp = corpus_fingerprint(corpus.texts, corpus.labels)
    b = open_budget(corpus, total=1.0)
    b.commit(_ledger(0.9), command="t")
    with pytest.raises(BudgetExceededError) as err:
        b.check(0.5)
    assert fp[:8] not in str(err.value) and b.keyed_fingerprint[:12] in str(err.value)
    runner = CliRunner()
    shown = runner.invoke(app, ["budget", "-i", str(small_csv), "--label-column", "label"])
    assert shown.exit_code == 0 and fp[:8] not in shown.output
    assert b.keyed_fingerprint[:12] in shown.output
    res = runner.invoke(app, ["keyphrases", "-i", str(small_csv), "-o",
                              str(tmp_path / "k.jsonl"), *FAST])
    assert res.exit_code == 2 and "budget exceeded" in said(res.output)
    assert fp[:8] not in res.output


def test_a_ledger_keyed_by_the_unsalted_fingerprint_is_migrated(_dptext_home):
    corpus = _corpus(6)
    fp = corpus_fingerprint(corpus.texts, corpus.labels)
    old = _v1_ledger(_dptext_home, fp, fp, [_v1_run("r1", fp, 1.0), _v1_run("r2", fp, 2.0)])
    b = open_budget(corpus)
    assert [r["run_id"] for r in b.runs] == ["r1", "r2"]  # the spend is not lost
    assert b.spent().epsilon == pytest.approx(3.0) and b.total == 5.0
    assert not old.exists() and b.path.is_file()
    data = json.loads(b.path.read_text())
    assert data["format"] == 2 and fp not in b.path.read_text()
    assert {r["keyed_fingerprint"] for r in data["runs"]} == {b.keyed_fingerprint}
    with pytest.raises(BudgetExceededError):
        b.check(2.5)
    b.commit(_ledger(0.5), command="t")
    assert len(open_budget(corpus).runs) == 3


def test_a_dataset_ledger_of_the_old_format_is_migrated(_dptext_home):
    v1, v2 = _corpus(6), _corpus(7)
    fps = [corpus_fingerprint(c.texts, c.labels) for c in (v1, v2)]
    path = _v1_ledger(_dptext_home, "dataset-ward", None,
                      [_v1_run("r1", fps[0], 1.0), _v1_run("r2", fps[1], 1.0)],
                      dataset_id="ward")
    b = open_budget(v1, dataset_id="ward")
    assert b.path == path and [r["run_id"] for r in b.runs] == ["r1", "r2"]
    assert b.spent().epsilon == pytest.approx(2.0)
    text = path.read_text()
    assert all(fp not in text for fp in fps)
    assert [r["keyed_fingerprint"] for r in json.loads(text)["runs"]] == [
        b.keyed_fingerprint, open_budget(v2, dataset_id="ward").keyed_fingerprint]
