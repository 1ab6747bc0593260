"""``pate`` end to end with the recording backend: planted canary documents never reach a
prompt, an output or a run-directory file; a killed run resumes without repeated prompts or
new DP noise; ``dptext generate --method pate`` writes the JSONL and the privacy report."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("dptext.embed", reason="needs dptext.embed")

from cli_output import said
from dptext.generators.pate import PateConfig, PateGenerator
from dptext.llm import LLMError, SamplingParams
from dptext.llm.recording import RecordingBackend
from dptext.run import CorpusSource, run
from test_generate import (  # the canary corpus and helpers of the generate tests
    CANARY_SENTENCES,
    CANARY_WORDS,
    _cli,
    _corpus_with_canaries,
    _embedder,
    _ngrams,
    _vocab_file,
    _write_csv,
)

pytestmark = pytest.mark.slow


class DyingBackend(RecordingBackend):
    """Answers ``alive`` prompts, then fails for good (a killed LLM server)."""

    max_concurrency = 1

    def __init__(self, alive: int) -> None:
        super().__init__()
        self.alive = alive

    def complete(self, prompts):
        if len(self.prompts) >= self.alive:
            raise LLMError("the model server went away (simulated)")
        return super().complete(prompts)


def _all_run_text(out) -> str:
    folders = (out.with_name(out.name + ".run"), out.with_name(out.stem + ".release"))
    files = [out, out.with_name(out.stem + ".privacy.json"),
             *(f for d in folders for f in sorted(d.rglob("*"))
               if f.is_file() and f.suffix != ".parquet")]
    return "\n".join(f.read_text(encoding="utf-8") for f in files).lower()


def run_pate(corpus, out, cfg, backend, *, resume=False):
    return run(PateGenerator(cfg), CorpusSource(corpus), out, llm=backend, resume=resume,
               progress=False).report


def _canaries_in_larger_classes():
    """The canary corpus with 30 more documents a class: enough for the DP label set."""
    from dptext.corpus import Corpus, read_corpus

    base, bbc = _corpus_with_canaries(), read_corpus("demo:bbc-news/train")
    labels = np.asarray(bbc.labels)
    extra = [i for c in sorted(set(bbc.labels)) for i in np.flatnonzero(labels == c)[-30:]]
    return Corpus(base.texts + tuple(bbc.texts[i] for i in extra),
                  base.labels + tuple(bbc.labels[i] for i in extra), source=base.source)


def test_canaries_stay_out_and_a_killed_run_resumes_without_new_noise(tmp_path):
    corpus = _canaries_in_larger_classes()
    emb = _embedder()
    # no declared label names: the classes are the DP label set, and the prompts use the DP
    # vocabulary, in which the canary words are public terms (the worst case: only the DP
    # histogram keeps them out)
    cfg = PateConfig(epsilon=4.0, documents=10, candidates_per_doc=3, teachers=8,
                     max_queries=20, vocab=_vocab_file(tmp_path), vocab_size=300,
                     document_type="medical record", seed=3, embedder=emb,
                     sampling=SamplingParams(max_tokens=60))
    out = tmp_path / "pate.jsonl"
    with pytest.raises(LLMError):
        run_pate(corpus, out, cfg, DyingBackend(12))
    run = tmp_path / "pate.jsonl.run"
    assert not (run / "pate" / "votes.json").exists() and not out.exists()
    first = {f: (run / f).read_text() for f in ("ledger.json", "pate/released.json")}
    first["released.json"] = first.pop("pate/released.json")
    assert json.loads(first["released.json"])["released"]["label_set"]["values"]["label"] == sorted(
        set(corpus.labels))
    assert len((run / "journal.jsonl").read_text().splitlines()) == 12

    with pytest.raises(ValueError, match="--resume"):
        run_pate(corpus, out, cfg, RecordingBackend())
    rec = RecordingBackend()
    report = run_pate(corpus, out, cfg, rec, resume=True)
    assert len(rec.prompts) == 30 - 12  # finished prompts are not repeated
    # the saved first release is reused as is
    assert (run / "pate" / "released.json").read_text() == first["released.json"]
    ledger = json.loads((run / "ledger.json").read_text())["releases"]
    saved = json.loads(first["ledger.json"])["releases"]
    assert saved[0]["name"] == "label set" and saved[0]["threshold_delta"] > 0
    assert saved[1]["name"] == "label histogram (tutor)"
    assert saved[2]["name"].startswith("vocabulary histogram")
    assert ledger[:3] == saved  # no new noise for them, and the votes added once
    assert [r["name"] for r in ledger[3:]] == ["GNMax teacher votes (20 queries)"]
    assert ledger[3]["dimension"] == 20 * 6  # the query budget: 20 answered, 5 classes + public
    g = report["guarantee"]
    assert 3.98 <= g["epsilon"] <= 4.0 and report["parameters"]["llm_calls"] == 30
    assert 0.9e-5 <= g["delta"] <= 1e-5
    assert report["parameters"]["queries_answered"] == 20
    docs = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(docs) == 10 and {d["label"] for d in docs} <= set(corpus.labels)

    # the privacy boundary: nothing private in any prompt, output or run-directory file
    released = set(json.loads(first["released.json"])["released"]["vocabulary"])
    prompts = [p.text().lower() for p in rec.prompts]
    everything = _all_run_text(out)
    for sentence in CANARY_SENTENCES:
        assert sentence.lower() not in everything
    for word in CANARY_WORDS:
        if word in everything:
            assert word in released, f"canary word {word!r} left unreleased"
    private = set().union(*(_ngrams(t, 6) for t in corpus.texts))
    for p in prompts:
        assert not (_ngrams(p, 6) & private)
    assert not (_ngrams(everything, 6) & private)


def test_generate_method_pate_end_to_end(tmp_path, monkeypatch):
    from dptext.llm import recording

    emb = _embedder()
    monkeypatch.setattr("dptext.embed.load_embedder", lambda *a, **k: emb)
    answer = recording._default_answer  # each candidate opens with its type as a label
    monkeypatch.setattr(recording, "_default_answer",
                        lambda p: answer(p).replace("\n\n", "\n\nNews Article: ", 1))
    data = tmp_path / "notes.csv"
    corpus = _corpus_with_canaries()
    _write_csv(data, corpus)
    labels = ",".join(sorted(set(corpus.labels)))
    out = tmp_path / "synthetic.jsonl"
    args = ["generate", "--method", "pate", "--epsilon", "6", "--input", str(data),
            "--label-column", "label", "--labels", labels, "--document-type", "news article",
            "--llm", "recording:", "--total-sequences", "10", "--out", str(out),
            "--no-progress", "--no-cache", "--max-tokens", "50"]
    r = _cli(args)
    assert r.exit_code == 0, r.output
    docs = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(docs) == 10 and all({"text", "label", "student_score"} <= set(d) for d in docs)
    assert not any(d["text"].startswith("News Article") for d in docs)  # cleaned off
    report = json.loads((tmp_path / "synthetic.privacy.json").read_text())
    assert 5.97 <= report["guarantee"]["epsilon"] <= 6.0
    assert report["command"] == "generate --method pate"
    assert report["parameters"]["llm_calls"] == 40  # 4 candidates per output document
    assert [x["name"] for x in report["releases"]] == ["label histogram (tutor)",
                                                       "GNMax teacher votes (40 queries)"]
    journal = [json.loads(x) for x in
               (tmp_path / "synthetic.jsonl.run" / "journal.jsonl").read_text().splitlines()]
    prompts = {j["prompt"]["messages"][-1]["content"] for j in journal}
    assert len(prompts) == 5  # the document type and a declared label name, nothing else
    assert all(p.startswith("Write a news article on the topic: ") for p in prompts)
    everything = _all_run_text(out)
    assert not any(s.lower() in everything for s in CANARY_SENTENCES)
    assert not any(w in everything for w in CANARY_WORDS)
    assert "Guarantee of this run" in said(r.output) and "40 LLM calls" in said(r.output)
    # a completed run refuses to start again without --resume, and resumes for free
    assert _cli(args).exit_code == 2
    r = _cli([*args, "--resume"])
    assert r.exit_code == 0 and json.loads((tmp_path / "synthetic.privacy.json").read_text())[
        "parameters"]["llm_calls_computed_this_run"] == 0
    assert np.array_equal([d["text"] for d in docs],
                          [json.loads(x)["text"] for x in out.read_text().splitlines()])


def test_refused_candidates_are_asked_again_and_counted(tmp_path):
    def answer(prompt):
        if prompt.params.seed % 4 == 0:
            return "I'm sorry, but I can't write that document."
        return f"Patient seen today. Notes on {prompt.text()[-60:]}."

    cfg = PateConfig(epsilon=4.0, documents=10, candidates_per_doc=3, teachers=8,
                     max_queries=20, vocab=_vocab_file(tmp_path), vocab_size=300,
                     document_type="medical record", seed=3, embedder=_embedder(),
                     sampling=SamplingParams(max_tokens=60))
    out = tmp_path / "pate.jsonl"
    rec = RecordingBackend(answer=answer)
    report = run_pate(_canaries_in_larger_classes(), out, cfg, rec)
    refused = sum(p.params.seed % 4 == 0 for p in rec.prompts)
    assert refused and len(rec.prompts) == 30 + refused
    assert report["parameters"]["llm_calls"] == len(rec.prompts)
    assert report["parameters"]["checks"]["refusals_retried"] == refused
    candidates = (tmp_path / "pate.jsonl.run" / "pate" / "candidates.jsonl").read_text()
    assert len(candidates.splitlines()) == 30 and "sorry" not in candidates.lower()
