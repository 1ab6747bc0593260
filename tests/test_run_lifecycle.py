"""The run lifecycle under every generator: one budget policy (the whole plan checked and
charged before anything is loaded or released), resume without new releases, and a
release folder a recipient can load — for kps, augpe, pate and dpft alike, through
``dptext.synthesize``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import dptext
from dptext.corpus import Corpus, read_corpus
from dptext.llm.recording import RecordingBackend
from dptext.privacy import BudgetExceededError
from dptext.privacy.budget import CorpusBudget, corpus_fingerprint

pytestmark = pytest.mark.slow

LABELS = ("sport", "tech")


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    bbc = read_corpus("demo:bbc-news/train")
    lab = np.asarray(bbc.labels)
    keep = [i for c in ("sports", "tech") for i in np.flatnonzero(lab == c)[:30]]
    return Corpus(tuple(bbc.texts[i] for i in keep),
                  tuple("sport" if bbc.labels[i] == "sports" else "tech" for i in keep),
                  source="lifecycle test")


@pytest.fixture(scope="module")
def embedder():
    from dptext.embed import load_embedder

    return load_embedder("model2vec", cache_dir="")


def _options(method: str, embedder, tiny) -> dict:
    """Small, fast settings of each generator (declared labels: a small corpus)."""
    if method == "kps":
        return dict(embedder=embedder, vocab="english:3000", vocab_size=200, per_class=2)
    if method == "augpe":
        return dict(embedder=embedder, per_class=1, iterations=1, random_words=0,
                    max_tokens=40)
    if method == "pate":
        return dict(embedder=embedder, documents=4, teachers=4, max_tokens=40)
    from dptext.generators.dpft import DPFTConfig, SamplingConfig

    return dict(base=tiny(), documents=2, config=DPFTConfig(epochs=0.3, batch_size=8,
                                                            max_length=16),
                sampling=SamplingConfig(max_new_tokens=4))


def _no_model(*a, **k):
    raise AssertionError("a model was loaded")


@pytest.mark.parametrize("method", ["kps", "augpe", "pate", "dpft"])
def test_every_method_charges_first_resumes_free_and_leaves_a_release(
        method, corpus, embedder, tiny, tmp_path, monkeypatch, offline_datasets):
    out = tmp_path / "syn.jsonl"
    first = dptext.synthesize(corpus, method, out=out, epsilon=4.0, labels=LABELS,
                              llm=RecordingBackend(), budget_total=4.2,
                              **_options(method, embedder, tiny))
    assert first.documents and first.report["guarantee"]["epsilon"] <= 4.0 + 1e-9
    assert {d["label"] for d in first.documents} <= set(LABELS)
    budget = CorpusBudget.open(corpus_fingerprint(corpus.texts, corpus.labels))
    assert [r["command"] for r in budget.runs] == [f"generate --method {method}"]
    spent = budget.spent().epsilon

    # the release folder: Parquet (pandas and datasets), JSONL, the card, privacy.json
    release = tmp_path / "syn.release"
    assert first.release_dir == release
    frame = pd.read_parquet(release / "documents.parquet")
    rows = (release / "documents.jsonl").read_text().splitlines()
    assert len(frame) == len(rows) == len(first.documents)
    ds = offline_datasets.load_dataset("parquet", split="train",
                                       data_files=str(release / "documents.parquet"),
                                       cache_dir=str(tmp_path / "hf-cache"))
    assert ds.num_rows == len(rows) and ds["text"] == list(frame["text"])
    assert json.loads((release / "privacy.json").read_text()) == json.loads(
        first.report_path.read_text())
    assert "ε" in (release / "README.md").read_text()

    # a second run at ε = 2 would take the corpus past 4.2: refused before any model is
    # loaded, any prompt sent or any release made
    monkeypatch.setattr("dptext.embed.load_embedder", _no_model)
    monkeypatch.setattr("dptext.generators.dpft.api.load_base", _no_model)
    backend = RecordingBackend()
    options = {k: v for k, v in _options(method, embedder, tiny).items()
               if k not in ("embedder", "base")}
    with pytest.raises(BudgetExceededError, match="budget exceeded"):
        dptext.synthesize(corpus, method, out=tmp_path / "again.jsonl", epsilon=2.0,
                          labels=LABELS, llm=backend, **options)
    assert backend.prompts == [] and not (tmp_path / "again.jsonl.run").exists()
    assert not (tmp_path / "again.jsonl").exists()

    # resuming the finished run: no release, no charge, no prompt
    rec = RecordingBackend()
    again = dptext.synthesize(corpus, method, out=out, epsilon=4.0, labels=LABELS, llm=rec,
                              resume=True, **_options(method, embedder, tiny))
    assert rec.prompts == []
    assert again.report["releases"] == first.report["releases"]
    after = CorpusBudget.open(corpus_fingerprint(corpus.texts, corpus.labels))
    assert len(after.runs) == 1 and after.spent().epsilon == pytest.approx(spent)
    assert [d["text"] for d in again.documents] == [d["text"] for d in first.documents] \
        or method == "dpft"  # dpft samples afresh (secret randomness): same count
    assert len(again.documents) == len(first.documents)


def test_resume_refuses_changed_release_options(corpus, embedder, tiny, tmp_path):
    out = tmp_path / "syn.jsonl"
    opts = _options("kps", embedder, tiny)
    dptext.synthesize(corpus, "kps", out=out, epsilon=4.0, labels=LABELS,
                      llm=RecordingBackend(), **opts)
    with pytest.raises(ValueError, match="exists from an earlier run"):
        dptext.synthesize(corpus, "kps", out=out, epsilon=4.0, labels=LABELS,
                          llm=RecordingBackend(), **opts)
    with pytest.raises(ValueError, match="epsilon differ"):
        dptext.synthesize(corpus, "kps", out=out, epsilon=3.0, labels=LABELS,
                          llm=RecordingBackend(), resume=True, **opts)


def test_unknown_options_and_methods_are_named(corpus, tmp_path):
    with pytest.raises(ValueError, match="unknown method 'gan'"):
        dptext.synthesize(corpus, "gan", out=tmp_path / "o.jsonl")
    with pytest.raises(TypeError, match=r"unknown option.*iterashuns"):
        dptext.synthesize(corpus, "augpe", out=tmp_path / "o.jsonl", iterashuns=3)


def test_a_prompt_cache_object_is_used(corpus, embedder, tiny, tmp_path):
    """An empty ``PromptCache`` passed in is still the cache (it is falsy when empty)."""
    from dptext.generators.registry import make_generator
    from dptext.llm import PromptCache
    from dptext.run import CorpusSource, run

    cache = PromptCache(tmp_path / "cache.jsonl")
    for i, expected in enumerate((16, 0)):  # the second run's candidates come from the cache
        rec = RecordingBackend()
        gen = make_generator("pate", epsilon=2.0, labels=LABELS,
                             **_options("pate", embedder, tiny))
        run(gen, CorpusSource(corpus), tmp_path / f"o{i}.jsonl", llm=rec, cache=cache,
            progress=False)
        assert len(rec.prompts) == expected


def test_augpe_killed_mid_fit_resumes_without_new_noise_or_charge(corpus, embedder, tiny,
                                                                   tmp_path):
    """Aug-PE calls the LLM between its releases: a run killed there resumes from its own
    folder — the votes already released are reused, nothing is charged again."""
    from dptext.llm import LLMError

    class Dies(RecordingBackend):
        def complete(self, prompts):
            if len(self.prompts) >= 3:  # the initial population (2), then one variation
                raise LLMError("the model server went away (simulated)")
            return super().complete(prompts)

    dying = Dies()
    dying.max_concurrency = 1
    out = tmp_path / "syn.jsonl"
    opts = dict(epsilon=4.0, labels=LABELS, **_options("augpe", embedder, tiny))
    with pytest.raises(LLMError):
        dptext.synthesize(corpus, "augpe", out=out, llm=dying, **opts)
    run_dir = tmp_path / "syn.jsonl.run"
    assert json.loads((run_dir / "run.json").read_text())["status"] == "fitting"
    votes = (run_dir / "augpe" / "votes_1.json").read_text()  # released before the prompts
    rec = RecordingBackend()
    result = dptext.synthesize(corpus, "augpe", out=out, llm=rec, resume=True, **opts)
    assert (run_dir / "augpe" / "votes_1.json").read_text() == votes  # no new noise
    assert len(rec.prompts) == 1  # only the variation that was not answered
    assert len(result.documents) == 2
    budget = CorpusBudget.open(corpus_fingerprint(corpus.texts, corpus.labels))
    assert len(budget.runs) == 1
    assert budget.spent().epsilon == pytest.approx(result.report["guarantee"]["epsilon"])
