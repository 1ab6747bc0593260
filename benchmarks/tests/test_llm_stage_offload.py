"""Offloading a whole-document cell's document stage (benchmarks/llm_stage_offload.py): the
job carried to the other machine rebuilds exactly the prompts the cell's own code builds,
and what ``write`` journals there is what the resumed cell looks up here (PATE's public
candidate stage too: its run then finishes here without an LLM call)."""

import dataclasses
import json
from argparse import Namespace
from types import SimpleNamespace

import pytest

import dptext.llm
from dptext.llm import DocumentOptions, Journal, PromptBuilder, SamplingParams
from dptext.llm.documents import first_attempt_seed
from dptext.llm.prompts import FewShotExample, PromptTemplate
from fault_server import FaultServer
from llm_stage_offload import (
    _capture,
    _capture_prompts,
    _Captured,
    _CapturedPrompts,
    _order,
    job_dict,
    land,
    stage_from_job,
    write,
)
from whole_documents_report import report

SEQS = [SimpleNamespace(label="refund", keyphrases=("refund", "card", "declined")),
        SimpleNamespace(label="pin", keyphrases=("pin", "blocked", "app"))]


def captured() -> _Captured:
    builder = PromptBuilder(
        "customer question to a bank",
        PromptTemplate(user="Write a {document_type} with: {keyphrases}", source="custom"),
        (FewShotExample("A public example.", ("public",)),),
        SamplingParams(max_tokens=32, stop=("\n\n",)))
    options = DocumentOptions(seed=5, min_coverage=0.5, max_attempts=2)
    return _Captured(SEQS, builder, options)


def carried(cell: str, identity: str) -> dict:
    """A job as the other machine reads it: through JSON."""
    return json.loads(json.dumps(job_dict(cell, identity, captured())))


def test_a_carried_job_rebuilds_the_same_builder_options_and_sequences():
    c = captured()
    seqs, builder, options = stage_from_job(carried("cell-s0", "openai:m@u"))
    assert builder == c.builder
    assert dataclasses.replace(options, retry=c.options.retry) == c.options
    assert options.retry.max_retries == c.options.retry.max_retries
    assert [(s.label, s.keyphrases) for s in seqs] == [(s.label, s.keyphrases) for s in SEQS]


def test_the_form_drawn_with_a_sequence_travels_and_is_asked_for_there(tmp_path):
    """A form-and-style cell (kps-form): each sequence's form is in the prompt written there,
    so the journal holds what the cell here looks up."""
    form = "a tweet of about 12 words that ends with a bbc.in link"
    seqs = [SEQS[0], SimpleNamespace(label="pin", keyphrases=("pin",), form=form)]
    c = captured()
    job = json.loads(json.dumps(job_dict("cell-s0", "recording", _Captured(
        seqs, c.builder, c.options))))
    assert [s.form for s in stage_from_job(job)[0]] == [None, form]
    identity = dptext.llm.make_backend("recording:").identity
    job["llm"] = identity
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "cell-s0.json").write_text(json.dumps(job))
    write(Namespace(llm="recording:", jobs=tmp_path / "jobs", journals=tmp_path / "out",
                    concurrency=2))
    journal = Journal(tmp_path / "out" / "cell-s0.journal.jsonl")
    formed = c.builder.build(("pin",), first_attempt_seed(c.options, 1), form)
    assert form in formed.messages[-1].content
    assert formed.key(identity) in journal
    assert c.builder.build(("pin",), first_attempt_seed(c.options, 1)).key(
        identity) not in journal


def test_the_cells_own_call_is_captured_not_run(monkeypatch, tmp_path):
    from synthetic_protocol import llm_documents

    monkeypatch.setattr(dptext.llm, "generate_documents", _capture)
    data = SimpleNamespace(document_type="note", max_tokens=16)
    with pytest.raises(_Captured) as got:
        llm_documents(SEQS, data, tmp_path / "journal.jsonl",
                      backend=dptext.llm.make_backend("recording:"), seed=3)
    assert got.value.builder.document_type == "note"
    assert got.value.builder.params.max_tokens == 16
    assert got.value.options.seed == 3
    assert not (tmp_path / "journal.jsonl").exists()


def test_write_journals_every_prompt_the_resumed_cell_looks_up(tmp_path):
    identity = dptext.llm.make_backend("recording:").identity
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "cell-s0.json").write_text(json.dumps(carried("cell-s0", identity)))
    write(Namespace(llm="recording:", jobs=tmp_path / "jobs", journals=tmp_path / "out",
                    concurrency=2))
    journal = Journal(tmp_path / "out" / "cell-s0.journal.jsonl")
    c = captured()
    for i, s in enumerate(SEQS):
        prompt = c.builder.build(s.keyphrases, first_attempt_seed(c.options, i))
        assert prompt.key(identity) in journal
    stats = json.loads((tmp_path / "out" / "cell-s0.stats.json").read_text())
    assert stats["documents"] == len(SEQS)


def test_write_refuses_a_job_fitted_for_another_backend(tmp_path):
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "cell-s0.json").write_text(json.dumps(carried("cell-s0", "other")))
    with pytest.raises(SystemExit, match="fitted for other"):
        write(Namespace(llm="recording:", jobs=tmp_path / "jobs", journals=tmp_path / "out",
                        concurrency=2))


def test_several_servers_of_the_jobs_model_write_its_journal_under_its_identity(tmp_path):
    identity = "openai:m@http://127.0.0.1:8080/v1"  # what the cell here was fitted with
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "cell-s0.json").write_text(json.dumps(carried("cell-s0", identity)))
    with FaultServer() as a, FaultServer() as b:
        pool = f"pool:openai:m@{a.url}/v1,openai:m@{b.url}/v1"
        write(Namespace(llm=pool, jobs=tmp_path / "jobs", journals=tmp_path / "out",
                        concurrency=2))
        with pytest.raises(SystemExit, match="fitted for"):  # a pool of another model
            write(Namespace(llm=f"pool:openai:other@{a.url}/v1", jobs=tmp_path / "jobs",
                            journals=tmp_path / "other", concurrency=2))
    journal = Journal(tmp_path / "out" / "cell-s0.journal.jsonl")
    c = captured()
    for i, s in enumerate(SEQS):
        assert c.builder.build(s.keyphrases, first_attempt_seed(c.options, i)).key(
            identity) in journal


def test_land_takes_unfinished_journals_only_when_asked_and_times_them(tmp_path):
    journals, cells = tmp_path / "journals", tmp_path / "cells"
    journals.mkdir()
    lines = [json.dumps({"key": str(i), "time": 100.0 + 7 * i, "completion": {}})
             for i in range(3)]
    for cell in ("b-floor-epsnone-n100-s0", "b-floor-epsnone-n100-s1"):
        (cells / cell).mkdir(parents=True)
        (cells / cell / "seconds.json").write_text(json.dumps({"seconds": 50.0}))
        # the last line torn mid-write (the deadline killed the writer), ending in "}"
        (journals / f"{cell}.journal.jsonl").write_text(
            "\n".join(lines) + '\n{"key": "3", "completion": {}')
    (journals / "b-floor-epsnone-n100-s0.stats.json").write_text(json.dumps(
        {"cell": "b-floor-epsnone-n100-s0", "wall_s": 30.0}))

    def landed(unfinished: bool) -> dict:
        land(Namespace(journals=journals, work_dir=tmp_path, unfinished=unfinished))
        return {c.name: json.loads((c / "seconds.json").read_text())["seconds"]
                for c in sorted(cells.iterdir()) if (c / "journal.jsonl").exists()}

    assert landed(False) == {"b-floor-epsnone-n100-s0": 80.0}
    # the unfinished one: its journal's span (first to last completion) is its time there
    assert landed(True) == {"b-floor-epsnone-n100-s0": 80.0, "b-floor-epsnone-n100-s1": 64.0}


def test_jobs_run_seed_major_dp_kps_at_eps_6_first():
    cells = ["b-floor-epsnone-n100-s0", "b-kps-eps3-n100-s1", "b-kps-eps1000-n100-s0",
             "b-kps-eps6-n100-s1", "b-kps-eps3-n100-s0", "b-kps-eps6-n100-s0"]
    assert sorted(cells, key=_order) == [
        "b-kps-eps6-n100-s0", "b-kps-eps3-n100-s0", "b-floor-epsnone-n100-s0",
        "b-kps-eps1000-n100-s0", "b-kps-eps6-n100-s1", "b-kps-eps3-n100-s1"]


def test_cells_of_the_same_model_served_elsewhere_get_their_own_table():
    def row(llm, acc):
        return {"corpus": "banking77", "method": "kps", "epsilon": 6.0, "seed": 0,
                "per_class": 100, "llm": llm, "command": "c", "documents": 10,
                "accuracy": acc, "macro_f1": acc, "llm_calls": 10, "wall_s": 36.0}

    args = Namespace(llm="local:m", also_llm=["openai:m@u"], per_class=100,
                     corpora=["banking77"], methods=["kps"], epsilons=[6.0], seeds=[0])
    text = report([row("openai:m@u", 0.5)], args)
    glance, _, rest = text.partition("| corpus | method | ε |")
    main, _, elsewhere = rest.partition("The same model served by llama.cpp")
    assert "0.500" not in main and "0.500 (1 seed)" in elsewhere
    assert "| 0.500 (1 seed)² |" in glance  # the summary shows it, marked as served
    assert "`openai:m@u`" in elsewhere
    assert "Computed by: `c`." in elsewhere
    assert "banking77 / kps / ε = 6 / seed 0" not in text  # run, if only served
    alone = Namespace(**{**vars(args), "also_llm": []})
    assert ("banking77 / kps / ε = 6 / seed 0: `nice -n 10 python benchmarks/"
            "bench_whole_documents.py --per-class 100 --corpora banking77 --methods kps "
            "--epsilons 6 --seeds 0 --llm local:m`") in report([row("openai:m@u", 0.5)], alone)
    assert "served by llama.cpp" not in report([row("openai:m@u", 0.5)], alone)


def test_pates_candidates_are_carried_written_there_once_and_its_run_ends_here(
        tmp_path, monkeypatch):
    import dptext.generators.pate.generator as pate
    from dptext.corpus import Corpus
    from dptext.embed import load_embedder
    from dptext.generators.pate import PateConfig, PateGenerator
    from dptext.llm import LLMError
    from dptext.llm.recording import RecordingBackend
    from dptext.run import CorpusSource, run

    class NoCalls(RecordingBackend):
        def complete(self, prompts):
            raise LLMError("asked the LLM")

    texts = [f"the match ended with a late goal number {i}" for i in range(12)]
    texts += [f"shares fell on the market today by {i} percent" for i in range(12)]
    corpus = CorpusSource(Corpus(tuple(texts), tuple(["sport"] * 12 + ["business"] * 12)))
    cfg = PateConfig(epsilon=4.0, documents=4, teachers=4, labels=("business", "sport"),
                     seed=3, embedder=load_embedder("model2vec", cache_dir=""),
                     sampling=SamplingParams(max_tokens=20))
    backend = dptext.llm.make_backend("recording:")
    cells, jobs, journals = tmp_path / "cells", tmp_path / "jobs", tmp_path / "journals"
    names = ["c-pate-eps4-n2-s3", "c-pate-eps6-n2-s3"]  # two ε of one seed: one pool
    for cell in names:
        (cells / cell).mkdir(parents=True)
        (cells / cell / "seconds.json").write_text(json.dumps({"seconds": 1.0}))
    jobs.mkdir()
    carried = []
    for cell, eps in zip(names, (4.0, 6.0), strict=True):
        with monkeypatch.context() as m, pytest.raises(_CapturedPrompts) as got:
            m.setattr(pate, "complete_checked", _capture_prompts)
            run(PateGenerator(dataclasses.replace(cfg, epsilon=eps)), corpus,
                cells / cell / "synthetic.jsonl", llm=backend, progress=False)
        job = job_dict(cell, backend.identity, got.value)
        (jobs / f"{cell}.json").write_text(json.dumps(job))
        carried.append(job["prompts"])
    assert backend.prompts == [] and carried[0] == carried[1] and len(carried[0]) == 4 * 4
    assert all("sport" in p.text() or "business" in p.text() for p in got.value.prompts)
    write(Namespace(llm="recording:", jobs=jobs, journals=journals, concurrency=2))
    computed = [json.loads((journals / f"{c}.stats.json").read_text())["prompts"]
                for c in names]
    assert sorted(computed) == [0, 16]  # the cell written second was answered by the first
    land(Namespace(journals=journals, work_dir=tmp_path, unfinished=False))
    result = run(PateGenerator(cfg), corpus, cells / names[0] / "synthetic.jsonl",
                 llm=NoCalls(), resume=True, progress=False)
    assert len(result.documents) == 4
