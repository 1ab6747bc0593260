"""One budget policy for every method: the run's whole plan is checked and charged to the
corpus's persistent budget before its first release (so a killed or abandoned run is
still counted; one that fails with an error is settled to the releases it made,
``test_failed_runs.py``), and an ε = ∞ run exhausts the budget. dpft's side is in
``test_dpft_privacy.py``; Aug-PE's in ``test_augpe_run.py``."""

from __future__ import annotations

import math

import pytest

from dptext.corpus import Corpus
from dptext.llm import LLMError
from dptext.llm.recording import RecordingBackend
from dptext.privacy import BudgetExceededError, NoiseSpec, PrivacyLedger, Sensitivity, compose
from dptext.privacy import release as dp_release
from dptext.privacy.budget import CorpusBudget, corpus_fingerprint, planned_run, settle_run


def test_planned_runs_compose_by_their_epsilon_and_delta_and_infinity_is_not_private():
    import numpy as np

    ledger = PrivacyLedger()
    dp_release(np.zeros(3), Sensitivity(1, 1, "one document, one cell"),
               NoiseSpec("gaussian", 1.0, 1e-6), ledger=ledger, name="counts")
    alone = compose(ledger.releases)
    block = planned_run("a planned run", 2.0, 1e-5)
    both = compose([*ledger.releases, block])
    assert both.epsilon == pytest.approx(alone.epsilon + 2.0)
    assert both.delta == pytest.approx(alone.delta + 1e-5)
    none = compose([*ledger.releases, planned_run("no DP", math.inf, 1e-5)])
    assert math.isinf(none.epsilon) and none.delta == 1.0


def test_a_settled_run_never_costs_more_than_its_charged_block(tmp_path):
    import numpy as np

    budget = CorpusBudget.open("f" * 64)
    budget.commit(PrivacyLedger(releases=[planned_run("plan", 2.0, 1e-5)]), command="x",
                  run_id="r1")

    def gaussian(eps):
        ledger = PrivacyLedger()
        dp_release(np.zeros(2), Sensitivity(1, 1, "one document, one cell"),
                   NoiseSpec("gaussian", eps, 1e-5), ledger=ledger, name="counts")
        return ledger.releases

    assert settle_run(budget, "r1", gaussian(3.0)).epsilon == pytest.approx(2.0)  # kept
    assert CorpusBudget.open("f" * 64).runs[0]["releases"][0]["mechanism"] == "approx-dp"
    spent = settle_run(budget, "r1", gaussian(1.5))
    assert spent.epsilon == pytest.approx(1.5, rel=1e-3)
    assert CorpusBudget.open("f" * 64).runs[0]["releases"][0]["mechanism"] == "gaussian"


class _Dead(RecordingBackend):
    """An LLM that is gone: the run dies at its first prompt, after its first release."""

    def complete(self, prompts):
        self.prompts.extend(prompts)
        raise LLMError("the model server went away (simulated)")


def _corpus() -> Corpus:
    texts = [f"the match ended with a late goal number {i}" for i in range(12)]
    texts += [f"shares fell on the market today by {i} percent" for i in range(12)]
    return Corpus(tuple(texts), tuple(["sport"] * 12 + ["business"] * 12))


def test_a_run_that_dies_after_its_first_release_is_charged_that_release(tmp_path,
                                                                         monkeypatch):
    import dptext

    def no_model(*a, **k):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr("dptext.embed.load_embedder", no_model)
    corpus = _corpus()
    options = dict(documents=4, teachers=4, labels=("business", "sport"), max_tokens=20)
    # the first run dies at its first LLM call, after its first release: it is charged
    # that release (the label tutor), not its whole plan
    with pytest.raises(LLMError):
        dptext.synthesize(corpus, "pate", out=tmp_path / "a.jsonl", epsilon=4.0,
                          llm=_Dead(), budget_total=4.2, cache=False, **options)
    budget = CorpusBudget.open(corpus_fingerprint(corpus.texts, corpus.labels))
    assert [r["command"] for r in budget.runs] == ["generate --method pate"]
    released = [r["name"] for r in budget.runs[0]["releases"]]
    assert released and not any("vote" in n for n in released)
    assert 0 < budget.spent().epsilon < 1.0
    # a second run at ε = 4.2 would bring the corpus past 4.2: refused before any
    # release, LLM call or model
    backend = RecordingBackend()
    with pytest.raises(BudgetExceededError, match="budget exceeded"):
        dptext.synthesize(corpus, "pate", out=tmp_path / "b.jsonl", epsilon=4.2,
                          llm=backend, **options)
    assert backend.prompts == [] and not (tmp_path / "b.jsonl.run").exists()
    assert len(CorpusBudget.open(corpus_fingerprint(corpus.texts, corpus.labels)).runs) == 1


def test_cli_pate_refuses_a_run_past_the_total_before_any_release(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from dptext.cli import app
    from dptext.corpus import read_corpus, write_jsonl

    monkeypatch.setattr("dptext.llm.make_backend", lambda spec, **k: _Dead())
    monkeypatch.setattr("dptext.embed.load_embedder", lambda *a, **k: pytest.fail("model"))
    c = _corpus()
    data = tmp_path / "in.jsonl"
    write_jsonl(({"text": t, "label": y} for t, y in zip(c.texts, c.labels, strict=True)),
                data)

    def pate(out, eps, *extra):
        return CliRunner().invoke(app, [
            "pate", "-i", str(data), "--label-column", "label", "--labels", "business,sport",
            "-o", str(tmp_path / out), "--epsilon", eps, "--documents", "4", "--teachers", "4",
            "--no-progress", "--no-cache", *extra])

    r = pate("a.jsonl", "4", "--budget-total", "4.2")
    assert r.exit_code != 0 and "went away" in r.output  # died at its first LLM call
    assert "release(s) made before the failure" in r.output
    read = read_corpus(data, label_column="label")
    budget = CorpusBudget.open(corpus_fingerprint(read.texts, read.labels))
    assert 0 < budget.spent().epsilon < 1.0 and budget.total == 4.2  # the tutor's release
    r = pate("b.jsonl", "4.2")
    assert r.exit_code != 0 and "budget exceeded" in r.output
    assert not (tmp_path / "b.jsonl.run").exists()


@pytest.mark.parametrize("command", ["keyphrases", "generate"])
def test_dpkps_charges_the_plan_before_its_first_release(tmp_path, monkeypatch, command):
    """A DP-KPS run that dies while fitting (after its first releases could have been shown)
    stays charged; a finished one records the releases it made."""
    import pandas as pd
    from typer.testing import CliRunner

    import dptext.generators.kps.generator as kcli
    from dptext.cli import app
    from dptext.corpus import read_corpus

    data = tmp_path / "notes.csv"
    pd.DataFrame({"text": ["the match ended with a late goal"] * 30
                  + ["shares fell on the market today"] * 30,
                  "label": ["sport"] * 30 + ["business"] * 30}).to_csv(data, index=False)
    args = [command, "--input", str(data), "--label-column", "label", "--labels",
            "sport,business", "--epsilon", "4", "--embedder", "model2vec",
            "--out", str(tmp_path / "o.jsonl")]
    if command == "generate":
        args += ["--llm", "recording:", "--no-progress", "--no-cache",
                 "--sequences-per-class", "1"]

    def dies(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(kcli, "fit_seeder", dies)
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 130, res.output  # interrupted in the fit
    c = read_corpus(data, label_column="label")
    runs = CorpusBudget.open(corpus_fingerprint(c.texts, c.labels)).runs
    assert len(runs) == 1 and runs[0]["guarantee"]["epsilon"] == pytest.approx(4.0, rel=1e-3)


def test_a_spend_that_reads_a_smaller_epsilon_after_a_run_says_why():
    """Near-non-private runs compose to an ε that falls as their summed δ grows: the line
    after a small run can read below the line before it, so the run says why."""
    import numpy as np

    from dptext.run.budget import LOWER_EPSILON_NOTE, BudgetOptions, charge

    def plan(eps):
        ledger = PrivacyLedger()
        dp_release(np.zeros(2), Sensitivity(1, 1, "one document, one cell"),
                   NoiseSpec("gaussian", eps, 1e-5), ledger=ledger, name="counts")
        return ledger.releases

    def run(eps):
        said = []
        charge(_corpus(), BudgetOptions(dataset_id="d"), plan(eps), command="x",
               parameters={}, input=None, say=said.append)
        return said

    assert LOWER_EPSILON_NOTE not in run(1000.0)  # no earlier run
    said = run(0.5)  # a small run after an ε = 1000 one: δ doubles, ε reads lower
    before, after = (float(s.split("ε = ")[1].split(",")[0]) for s in said[1:3])
    assert after < before and said[-1] == LOWER_EPSILON_NOTE
    said = run(50.0)  # a run that adds more ε than the larger δ takes away
    before, after = (float(s.split("ε = ")[1].split(",")[0]) for s in said[1:3])
    assert after > before and LOWER_EPSILON_NOTE not in said
