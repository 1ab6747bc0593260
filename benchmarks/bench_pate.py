"""pate beside DP-KPS and the non-DP "public generator only" floor, through one local LLM.

Per dataset (the shared protocol of ``synthetic_protocol``): ``--per-class`` output
documents per class from ``--candidates`` × as many public candidates, written once by the
LLM from the document type and the declared label names and reused at every ε (one prompt
cache per work folder). Rows:

* ``pate`` at each ε (teacher votes + label tutor, the whole budget);
* ``public generator only``: the same candidates, chosen at random per label in the counts
  of the first pate run (no DP, no private data apart from those DP counts);
* ``DP-KPS`` at each ε with the same number of output documents.

Downstream: the protocol's MLP head on MiniLM embeddings, tested on real test documents.
Every finished row is appended to ``results.jsonl`` in ``--work-dir`` (by default under
``$DPTEXT_BENCH_DIR`` or ``~/.cache/dptext-bench``, then ``pate/``) and, with ``--write``,
the table is rewritten after each row, so a killed benchmark resumes where it stopped (LLM
completions are journaled too).

    python benchmarks/bench_pate.py --llm-lock LOCKFILE --write   # ~40 min on 2 cores
    python benchmarks/bench_pate.py --quick                       # a smoke run

``--llm-lock`` holds that file (flock) while the shared LLM runs, so that LLM benchmarks
of several users run one after the other while the rest (embedding the private corpus,
teachers, downstream scores) runs beside them.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # installed or not

from dptext.generators.pate import PateConfig, PateGenerator
from dptext.llm import PromptCache, SamplingParams
from dptext.run import CorpusSource, run, run_dir_for
from harness.options import study_parser
from harness.report import markdown_table, record
from harness.store import ResultStore
from synthetic_protocol import (
    BENCH_LLM,
    BenchData,
    downstream,
    kps_documents,
    llm_lock,
    load_data,
    shared_backend,
)

#: per dataset: output documents per class and teachers (BBC: ~17 documents per teacher;
#: health tweets: ~200)
SIZES = {"bbc-news": (10, 100), "health-tweets": (5, 250)}
HEADER = ["dataset", "ε", "method", "LLM calls", "accuracy", "macro-F1", "spent ε", "seconds"]


class MemoEmbedder:
    """MiniLM with an in-memory memo (this process only, never on disk), so the private
    corpus is embedded once for all ε."""

    def __init__(self) -> None:
        from dptext.embed import load_embedder

        self.inner = load_embedder("minilm", cache_dir="")
        self.memo: dict[str, np.ndarray] = {}

    def encode(self, texts, **kw) -> np.ndarray:
        todo = list(dict.fromkeys(t for t in texts if t not in self.memo))
        if todo:
            self.memo.update(zip(todo, np.asarray(self.inner.encode(todo)), strict=True))
        return np.stack([self.memo[t] for t in texts])


def pate_row(data: BenchData, eps: float, per_class: int, teachers: int, args, work: Path,
             emb: MemoEmbedder) -> dict:
    out = work / f"pate-{data.name}-eps{eps:g}.jsonl"
    cfg = PateConfig(epsilon=eps, delta=args.delta, documents=per_class * len(data.classes),
                     candidates_per_doc=args.candidates, teachers=teachers,
                     labels=data.classes, document_type=data.document_type, seed=args.seed,
                     sampling=SamplingParams(max_tokens=data.max_tokens))
    started = time.perf_counter()
    with llm_lock(args.llm_lock):  # the candidates; the votes are quick once embedded
        # the run folder's journal makes a row resumable
        report = run(PateGenerator(dataclasses.replace(cfg, embedder=emb)),
                     CorpusSource(data.train), out, llm=shared_backend(),
                     cache=PromptCache(work / "llm-cache.jsonl"),
                     resume=run_dir_for(out).exists(), concurrency=1, progress=True).report
    docs = [json.loads(x) for x in out.read_text().splitlines()]
    score = downstream([d["text"] for d in docs], [d["label"] for d in docs], data)
    p = report["parameters"]
    return {"llm_calls": p["llm_calls"], **score, "spent": report["guarantee"]["epsilon"],
            "seconds": time.perf_counter() - started,
            "sigma_per_query": p["gnmax_sigma_per_query"],
            "tutor_counts": p["tutor_counts"]}


def floor_row(data: BenchData, pate_out: Path, counts: list[int], seed: int) -> dict:
    """Random candidates per label in the given counts: the public generator alone."""
    cands = [json.loads(x) for x in
             (run_dir_for(pate_out) / "pate" / "candidates.jsonl").read_text().splitlines()]
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for label, n in zip(data.classes, counts, strict=True):
        pool = [c["text"] for c in cands if c["topic"] == label and c["text"]]
        for i in rng.permutation(len(pool))[:n]:
            texts.append(pool[i])
            labels.append(label)
    return {"llm_calls": len(cands), **downstream(texts, labels, data), "spent": 0.0,
            "seconds": 0.0}


def table(results: dict) -> str:
    rows = []
    for key, r in results.items():
        name, eps, method = key.split("|")
        rows.append([name, eps, method, r["llm_calls"], r["accuracy"], r["macro_f1"],
                     "—" if method == "public generator only" else f"{r['spent']:.3f}",
                     f"{r['seconds']:.0f}"])
    return markdown_table(HEADER, rows)


def main() -> None:
    ap = study_parser(__doc__, corpora=list(SIZES), epsilons=[4.0, 8.0], work_dir="pate")
    ap.add_argument("--candidates", type=float, default=4.0)
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="2 documents per class, BBC only")
    ap.add_argument("--no-kps", action="store_true")
    ap.add_argument("--llm-lock", help="flock this file while the LLM runs")
    args = ap.parse_args()
    work = args.work_dir / ("quick" if args.quick else "full")
    store = ResultStore(work / "results.jsonl", ("row",))
    results = {r["row"]: r["result"] for r in store.rows()}
    emb = MemoEmbedder()

    def done(key: str, row: dict) -> None:
        store.add({"row": key, "result": row})
        results[key] = row
        print(key, {k: v for k, v in row.items() if k != "tutor_counts"}, flush=True)
        if args.write:
            record("pate", "pate: PATE-style DP augmentation beside DP-KPS and the public "
                   "generator alone", notes(args) + "\n\n" + table(results))

    datasets = {name: load_data(name)
                for name in (args.corpora[:1] if args.quick else args.corpora)}
    for name, data in datasets.items():  # first, while another user may hold the LLM
        if any(f"{name}|{eps:g}|pate" not in results for eps in args.epsilons):
            print(f"embedding the {len(data.train)} private documents of {name} (memory only)",
                  flush=True)
            emb.encode(list(data.train.texts))
    for name, data in datasets.items():
        per_class, teachers = SIZES[name]
        if args.quick:
            per_class, teachers = 2, 20
        first = None
        for eps in args.epsilons:
            key = f"{name}|{eps:g}|pate"
            if key not in results:
                done(key, pate_row(data, eps, per_class, teachers, args, work, emb))
            first = first or (work / f"pate-{name}-eps{eps:g}.jsonl", results[key])
        key = f"{name}|—|public generator only"
        if key not in results:
            done(key, floor_row(data, first[0], first[1]["tutor_counts"], args.seed))
        if args.no_kps:
            continue
        for eps in args.epsilons:
            key = f"{name}|{eps:g}|DP-KPS"
            if key not in results:
                started = time.perf_counter()
                with llm_lock(args.llm_lock):
                    run = kps_documents(data, eps, per_class * len(data.classes),
                                        work_dir=work, delta=args.delta, seed=args.seed)
                texts, labels = zip(*run.docs, strict=True)
                done(key, {"llm_calls": run.prompts, **downstream(list(texts), list(labels),
                                                                  data),
                           "spent": run.epsilon, "seconds": time.perf_counter() - started})


def notes(args) -> str:
    sizes = "; ".join(f"{n}: {p} documents per class, {t} teachers"
                      for n, (p, t) in SIZES.items())
    return (f"LLM {BENCH_LLM}, δ = {args.delta:g}. pate: {args.candidates:g} public "
            f"candidates per output document (written once per dataset from the document type "
            f"and the label name, reused at every ε), every candidate queried, 5 % of ε to the "
            f"label tutor; {sizes}. The floor picks the same candidates at random per label "
            "in the counts of the first pate run. DP-KPS: dptext's defaults at the same total "
            "ε, one LLM document per DP keyphrase sequence, as many documents. Accuracy and "
            "macro-F1: the protocol's MLP head on MiniLM embeddings, trained on the synthetic "
            "set, tested on 2,000 real test documents (all of BBC's test split). LLM calls: "
            "prompts each row needs (pate's candidates are shared by its ε rows and the "
            "floor). Seconds: wall time of the row on this machine, LLM included when it ran.")


if __name__ == "__main__":
    main()
