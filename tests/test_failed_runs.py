"""A run pays for what it released, not for what it meant to: options are resolved before
the charge (a mistyped name costs nothing), and a run that fails after its charge is
settled to the releases it made before the failure; resuming it charges its plan again."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import dptext
from dptext.cli import app
from dptext.corpus import Corpus, read_corpus
from dptext.generators import registry
from dptext.generators.base import BaseGenerator, CorpusInfo, Documents, RunContext
from dptext.privacy import NoiseSpec, Release, Sensitivity, compose
from dptext.privacy import release as dp_release
from dptext.privacy.budget import CorpusBudget, corpus_fingerprint
from dptext.run import run_dir_for

DATASET = "notes"  # every run here spends this dataset's ledger (public key)


@pytest.fixture
def notes(tmp_path):
    path = tmp_path / "notes.csv"
    pd.DataFrame({"text": ["the match ended with a late goal for the home side"] * 30
                  + ["shares fell on the market today after the report"] * 30,
                  "label": ["sport"] * 30 + ["business"] * 30}).to_csv(path, index=False)
    return path


def spent(corpus_path) -> tuple[int, float]:
    """(runs, ε) the dataset's ledger records."""
    c = read_corpus(corpus_path, label_column="label")
    budget = CorpusBudget.open(corpus_fingerprint(c.texts, c.labels), dataset_id=DATASET)
    return len(budget.runs), budget.spent().epsilon


COMMON = ["--label-column", "label", "--epsilon", "6", "--dataset-id", DATASET]
GENERATE = ["--llm", "recording:", "--no-progress", "--no-cache"]


@pytest.mark.parametrize("command, extra", [
    (["keyphrases"], ["--vocab", "englsh"]),
    (["keyphrases"], ["--embedder", "minilmx"]),
    (["generate"], [*GENERATE, "--vocab", "englsh"]),
    (["generate"], [*GENERATE, "--vocab", "english:20000+quantites"]),
    (["generate"], ["--llm", "local:qwen9", "--no-progress"]),
    (["generate", "--method", "augpe"], [*GENERATE, "--vocab", "englsh"]),
    (["augpe"], [*GENERATE, "--vocab", "file:missing.txt"]),
    (["pate"], [*GENERATE, "--vocab", "englsh"]),
    (["pate"], [*GENERATE, "--embedder", "minilmx"]),
    (["dpft"], ["--model", "no-such-model-folder", "--no-progress"]),
])
def test_a_mistyped_name_is_refused_before_the_charge(notes, tmp_path, command, extra):
    res = CliRunner().invoke(app, [*command, "--input", str(notes), *COMMON, *extra,
                                   "--out", str(tmp_path / "o.jsonl")])
    assert res.exit_code == 2, res.output
    assert "error:" in res.output
    assert "privacy spent" not in res.output  # nothing was charged, so nothing is said
    assert spent(notes) == (0, 0.0)
    assert not run_dir_for(tmp_path / "o.jsonl").exists()


def test_the_readme_augpe_command_runs_with_its_defaults(notes, tmp_path):
    """The issue's command: Aug-PE's own --vocab default is one its loader knows."""
    res = CliRunner().invoke(app, [
        "augpe", "--input", str(notes), "--text-column", "text", *COMMON, *GENERATE,
        "--document-type", "movie review", "--per-class", "2", "--iterations", "2",
        "--embedder", "model2vec", "--out", str(tmp_path / "syn.jsonl")])
    assert res.exit_code == 0, res.output
    assert len((tmp_path / "syn.jsonl").read_text().splitlines()) == 4


# ------------------------------------------------------------- a generator that fails
COUNTS = "word counts"


@dataclass
class Flaky(BaseGenerator):
    """Releases noisy counts of two words (one parallel release), then fails with
    ``fail_after`` releases made: 0 (before any), 1 (after it) or None (never)."""

    name: ClassVar[str] = "flaky"
    uses_llm: ClassVar[bool] = False
    POST_PROCESSING: ClassVar = ("fail_after",)  # not a release option: resume may fix it
    epsilon: float = 1.0
    delta: float = 1e-5
    fail_after: int | None = 1
    labels: Any = None

    def plan(self, info: CorpusInfo) -> list[Release]:
        return self._release(None, dry=True)

    def _release(self, corpus: Corpus | None, ctx: RunContext | None = None,
                 dry: bool = False) -> list[Release]:
        from dptext.privacy import PrivacyLedger

        ledger = ctx.ledger if ctx else PrivacyLedger()
        for word in ("goal", "shares"):
            count = 0.0 if dry else float(sum(word in t for t in corpus.texts))
            dp_release(np.array([count]), Sensitivity(1.0, 1.0, "one document, one count"),
                       NoiseSpec("gaussian", self.epsilon / 2, self.delta / 2),
                       ledger=ledger, name=f"{COUNTS}: {word}")
            if ctx is not None and self.fail_after == len(ctx.ledger.releases):
                raise RuntimeError("the disk filled up")
        return ledger.releases

    def fit(self, corpus: Corpus, ctx: RunContext) -> dict[str, Any]:
        if self.fail_after == 0:
            raise RuntimeError("the disk filled up")
        self._release(corpus, ctx)
        return {"n": len(ctx.ledger.releases)}

    def write_documents(self, state: dict[str, Any], ctx: RunContext) -> Documents:
        return Documents(records=[{"text": "a public sentence"}], parameters={})


@pytest.fixture
def flaky(monkeypatch):
    import sys
    import types

    module = types.ModuleType("flaky_generator")
    module.Flaky = Flaky
    monkeypatch.setitem(sys.modules, "flaky_generator", module)
    monkeypatch.setitem(registry.GENERATORS, "flaky", "flaky_generator:Flaky")


def corpus() -> Corpus:
    return Corpus(tuple(["a late goal"] * 20 + ["shares fell"] * 20), source="toy")


def ledger_epsilon() -> float:
    c = corpus()
    return CorpusBudget.open(corpus_fingerprint(c.texts, c.labels),
                             dataset_id=DATASET).spent().epsilon


def test_a_run_that_fails_is_charged_the_releases_it_made(flaky, tmp_path):
    said: list[str] = []
    out = tmp_path / "o.jsonl"
    with pytest.raises(RuntimeError, match="disk filled up"):
        dptext.synthesize(corpus(), "flaky", out=out, epsilon=1.0, dataset_id=DATASET,
                          say=said.append)
    one = compose([Flaky(epsilon=1.0)._release(None, dry=True)[0]]).epsilon
    assert 0 < one < 1.0
    assert ledger_epsilon() == pytest.approx(one)  # the one release made, not the plan
    assert any("for the 1 release(s) made before the failure" in s for s in said)
    # resuming charges the plan again, then settles to every release (the first reused)
    said.clear()
    result = dptext.synthesize(corpus(), "flaky", out=out, epsilon=1.0, dataset_id=DATASET,
                               resume=True, say=said.append, fail_after=None)
    assert any("charged again to resume it" in s for s in said)
    assert [r.name for r in result.ledger.releases] == [f"{COUNTS}: goal", f"{COUNTS}: shares"]
    assert ledger_epsilon() == pytest.approx(result.report["guarantee"]["epsilon"])
    assert ledger_epsilon() <= 1.0 + 1e-9


def test_resuming_a_settled_run_is_refused_when_its_plan_no_longer_fits(flaky, tmp_path):
    out = tmp_path / "o.jsonl"
    with pytest.raises(RuntimeError):
        dptext.synthesize(corpus(), "flaky", out=out, epsilon=1.0, dataset_id=DATASET,
                          budget_total=1.5)
    dptext.synthesize(corpus(), "flaky", out=tmp_path / "other.jsonl", epsilon=2.0,
                      dataset_id=DATASET, fail_after=None)  # spends what the first freed
    before = ledger_epsilon()
    with pytest.raises(dptext.privacy.BudgetExceededError, match="resuming this run"):
        dptext.synthesize(corpus(), "flaky", out=out, epsilon=1.0, dataset_id=DATASET,
                          resume=True, fail_after=None)
    assert ledger_epsilon() == pytest.approx(before)  # the refusal changed nothing


def test_a_run_that_fails_before_any_release_costs_nothing(flaky, tmp_path):
    said: list[str] = []
    out = tmp_path / "o.jsonl"
    with pytest.raises(RuntimeError):
        dptext.synthesize(corpus(), "flaky", out=out, epsilon=1.0, dataset_id=DATASET,
                          say=said.append, fail_after=0)
    assert ledger_epsilon() == 0.0
    assert "nothing was released; nothing charged" in said
    assert not run_dir_for(out).exists()  # nothing to resume: the same command starts afresh
    dptext.synthesize(corpus(), "flaky", out=out, epsilon=1.0, dataset_id=DATASET,
                      fail_after=None)
    assert 0 < ledger_epsilon() <= 1.0 + 1e-9


def test_a_killed_run_stays_charged(flaky, tmp_path, monkeypatch):
    """An interrupt is a kill, not an error: the whole plan stays (resume continues it)."""
    def interrupted(self, corpus, ctx):
        raise KeyboardInterrupt

    monkeypatch.setattr(Flaky, "fit", interrupted)
    with pytest.raises(KeyboardInterrupt):
        dptext.synthesize(corpus(), "flaky", out=tmp_path / "o.jsonl", epsilon=1.0,
                          dataset_id=DATASET)
    plan = compose(Flaky(epsilon=1.0)._release(None, dry=True)).epsilon
    assert ledger_epsilon() == pytest.approx(plan)


class BrokenLLM:
    """An LLM that fails on its first prompt with an error that is not retried."""

    identity = "broken"
    max_concurrency = 1

    def complete(self, prompts):
        raise RuntimeError("the LLM server went away")

    def close(self) -> None:
        pass


def test_augpe_failing_at_its_first_prompt_is_charged_its_released_vocabulary(notes, tmp_path):
    """A real generator: Aug-PE releases its DP label set and vocabulary, then its first
    LLM call fails; the ledger keeps those two releases, not the run's ε = 6."""
    with pytest.raises(RuntimeError, match="went away"):
        dptext.synthesize(str(notes), "augpe", out=tmp_path / "o.jsonl", epsilon=6.0,
                          label_column="label", dataset_id=DATASET, llm=BrokenLLM(),
                          embedder="model2vec", per_class=2, iterations=1)
    runs, epsilon = spent(notes)
    assert runs == 1 and 0 < epsilon < 6.0
    c = read_corpus(notes, label_column="label")
    run = CorpusBudget.open(corpus_fingerprint(c.texts, c.labels), dataset_id=DATASET).runs[0]
    names = [r["name"] for r in run["releases"]]
    assert any("label set" in n for n in names) and any("vocabulary" in n for n in names)
    assert not any("vote" in n for n in names)
    assert math.isfinite(epsilon)


def test_a_run_resumed_on_another_machine_is_charged_to_its_ledger(flaky, tmp_path,
                                                                   monkeypatch):
    """A run folder carried to a machine whose ledger has no entry for it (a benchmark
    cell resumed in the next session, a ledger removed): its plan is charged there before
    it goes on, then settled to its releases, instead of failing after the fit."""
    out = tmp_path / "o.jsonl"
    with monkeypatch.context() as m:
        def interrupted(self, corpus, ctx):
            raise KeyboardInterrupt

        m.setattr(Flaky, "fit", interrupted)
        with pytest.raises(KeyboardInterrupt):
            dptext.synthesize(corpus(), "flaky", out=out, epsilon=1.0, dataset_id=DATASET,
                              fail_after=None)
    monkeypatch.setenv("DPTEXT_HOME", str(tmp_path / "another-machine"))
    assert ledger_epsilon() == 0.0
    said: list[str] = []
    result = dptext.synthesize(corpus(), "flaky", out=out, epsilon=1.0, dataset_id=DATASET,
                               resume=True, say=said.append, fail_after=None)
    assert any("not in this machine's ledger" in s for s in said)
    assert ledger_epsilon() == pytest.approx(result.report["guarantee"]["epsilon"])
    assert 0 < ledger_epsilon() <= 1.0 + 1e-9


def test_a_failed_run_resumed_on_another_machine_is_charged_to_its_ledger(flaky, tmp_path,
                                                                          monkeypatch):
    out = tmp_path / "o.jsonl"
    with pytest.raises(RuntimeError, match="disk filled up"):
        dptext.synthesize(corpus(), "flaky", out=out, epsilon=1.0, dataset_id=DATASET)
    monkeypatch.setenv("DPTEXT_HOME", str(tmp_path / "another-machine"))
    # refused there when its plan does not fit, changing nothing
    with pytest.raises(dptext.privacy.BudgetExceededError):
        dptext.synthesize(corpus(), "flaky", out=out, epsilon=1.0, dataset_id=DATASET,
                          resume=True, fail_after=None, budget_total=0.1)
    assert ledger_epsilon() == 0.0
    said: list[str] = []
    dptext.synthesize(corpus(), "flaky", out=out, epsilon=1.0, dataset_id=DATASET,
                      resume=True, say=said.append, fail_after=None)
    assert any("not in this machine's ledger" in s for s in said)
    assert 0 < ledger_epsilon() <= 1.0 + 1e-9
