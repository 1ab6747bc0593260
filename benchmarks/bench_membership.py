"""Membership inference on BBC News and the complaints: synthetic releases, the LLM-only
floor and copy controls.

Members are a corpus's training split (the private corpus a release is fitted on),
non-members its test split. Every release is scored by the evaluation suite's
membership section, through its Python API (``dptext.evaluate.suite.evaluate`` with the
private corpus, what ``dptext evaluate --private`` runs):

* DP-KPS keyphrase-only releases of ``--keyphrase-corpora`` (the constructor's defaults,
  500 sequences per class; a fit per ε and seed) at each ε (δ = 1e-5; ε → ∞ fitted at
  ``INF_EPSILON``), scored under the keyphrase-only protocol: real documents become
  phrase sequences over the released vocabulary, the form of the release;
* with ``--documents DIR``: the whole documents of every generator's cells that
  ``bench_whole_documents.py --work-dir DIR`` finished for the corpus (any method, ε,
  seed and size), scored as documents, and beside them a copy control of the same size
  (the cells' ``real`` sample: as many real training documents a class, verbatim); the
  LLM-only floor's cells (documents from uniformly drawn public words: nothing private)
  are the attacks' null on LLM-written text;
* the copy control: a "release" that is a verbatim copy of a fifth of the training
  documents (a different fifth per seed), scored as whole documents.

The figures are computed on public corpora standing in for private data.

    nice -n 10 python benchmarks/bench_membership.py --corpora bbc-news,complaints \
        --epsilons 3,6,inf --seeds 0,1,2 --documents benchmarks/results/membership --write
    # the cells it scores (a local LLM, one thread: DP-KPS and the floor about 10 min a
    # cell, PATE about 30 min a seed for all three ε, which share its candidate pool):
    DPTEXT_LLM_THREADS=1 nice -n 10 python benchmarks/bench_whole_documents.py \
        --corpora bbc-news --methods kps,pate,floor --epsilons 6,1000,3 --per-class 20 \
        --work-dir benchmarks/results/membership --concurrency 1 \
        --results benchmarks/results/membership/documents.jsonl

Each release's scores go to ``benchmarks/results/membership/attacks.jsonl`` as they are
computed (no text: AUCs, intervals, TPRs); a rerun scores only the releases not there.
"""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path

import numpy as np

from bench_whole_documents import corpus_data
from dptext.corpus import read_corpus
from dptext.embed import load_embedder
from dptext.evaluate.data import Labelled, from_corpus
from dptext.evaluate.membership import TARGET_FPR
from dptext.evaluate.suite import EvalConfig, evaluate
from harness.options import add_list, study_parser
from harness.report import markdown_table, record
from harness.stats import eps_name, mean_sd
from harness.store import ResultStore
from keyphrase_protocol import INF_EPSILON, TimedEmbedder, make_seeder
from synthetic_protocol import real_sample

PER_CLASS = 500
RESULTS = Path(__file__).parent / "results" / "membership" / "attacks.jsonl"
METHOD_NAMES = {"kps": "DP-KPS", "augpe": "Aug-PE", "pate": "PATE", "dpft": "DP fine-tuning",
                "invisibleink": "InvisibleInk", "floor": "LLM-only floor"}
ATTACKS = {"embedding_distance": "embedding distance", "rare_ngrams": "rare n-grams"}


class UnitRows:
    """The memoising MiniLM wrapper with unit-norm rows, as the evaluation suite wants."""

    def __init__(self, timed: TimedEmbedder):
        self.timed = timed

    def encode(self, texts) -> np.ndarray:
        x = self.timed.encode(list(texts))
        return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def kps_release(train, eps: float, seed: int, timed: TimedEmbedder) -> Labelled:
    seeder = make_seeder("default", eps, timed)
    seeder.fit(train, rng=np.random.default_rng([seed, 0]))
    seqs = seeder.sample(PER_CLASS, rng=np.random.default_rng([seed, 1]))
    kps = tuple(tuple(s.keyphrases) for s in seqs)
    return Labelled(texts=tuple(", ".join(k) for k in kps), labels=tuple(s.label for s in seqs),
                    keyphrases=kps, keyphrase_only=True, source=f"kps ε={eps_name(eps)}")


def copy_release(private: Labelled, seed: int) -> Labelled:
    pick = np.random.default_rng([seed, 2]).choice(len(private), len(private) // 5,
                                                   replace=False)
    return Labelled(texts=tuple(private.texts[i] for i in pick),
                    labels=tuple(private.labels[i] for i in pick), source="copy of 1/5")


def document_cells(root: Path, corpus: str) -> dict[tuple[str, float | None, int], list[Path]]:
    """The finished cells of ``corpus`` under ``root`` (a whole-documents work directory) by
    (method, ε, documents a class): a generator's cell is finished when its privacy report
    is written, the LLM-only floor's (no ε) when its documents are; ε = ``INF_EPSILON``
    reads as ε → ∞."""
    name = re.compile(rf"{re.escape(corpus)}-(?P<method>[a-z]+)-eps(?P<eps>[0-9.e+]+|none)"
                      r"-n(?P<n>\d+)-s(?P<seed>\d+)")
    cells: dict[tuple[str, float | None, int], list[Path]] = {}
    for folder in sorted((root / "cells").glob(f"{corpus}-*")):
        m = name.fullmatch(folder.name)
        done = "synthetic.jsonl" if m and m["eps"] == "none" else "synthetic.privacy.json"
        if m and (folder / done).exists():
            eps = None if m["eps"] == "none" else float(m["eps"])
            if eps is not None and eps >= INF_EPSILON:
                eps = math.inf
            cells.setdefault((m["method"], eps, int(m["n"])), []).append(folder)
    return cells


def documents_release(folder: Path) -> Labelled:
    rows = [json.loads(line) for line in (folder / "synthetic.jsonl").open()]
    return Labelled(texts=tuple(r["text"] for r in rows),
                    labels=tuple(r["label"] for r in rows), source=folder.name)


def sample_release(corpus: str, per_class: int, seed: int) -> Labelled:
    """The whole-documents cells' ``real`` sample: ``per_class`` training documents a class."""
    texts, labels = real_sample(corpus_data(corpus), per_class, seed)
    return Labelled(texts=tuple(texts), labels=tuple(labels), source=f"real {per_class}/class")


def membership(release: Labelled, private: Labelled, test: Labelled, encoder,
               seed: int) -> dict:
    cfg = EvalConfig(classifiers=(), fidelity=False, leakage=False, coherence=False,
                     seed=seed)
    return evaluate(release, test, private=private, cfg=cfg, encoder=encoder)["membership"]


def summary_rows(corpus: str, name: str, eps: str, results: list[dict]) -> list[list]:
    rows = []
    for key, label in ATTACKS.items():
        got = [r["attacks"][key] for r in results]
        lo = min(g["auc_ci"][0] for g in got)
        hi = max(g["auc_ci"][1] for g in got)
        rows.append([corpus, name, eps, len(results), label, mean_sd([g["auc"] for g in got]),
                     f"{lo:.3f} – {hi:.3f}", mean_sd([g["tpr_at_fpr"] for g in got])])
    return rows


def releases_of(corpus: str, args, train, timed) -> list[tuple[str, str, list]]:
    """(release name, ε, one (instance key, release maker) per seed or cell) for
    ``corpus``; the key names the release in the result store."""
    runs = [("copy control: 1/5 of the members", "–",
             [(f"copy-fifth-s{s}", lambda private, s=s: copy_release(private, s))
              for s in args.seeds])]
    if corpus in args.keyphrase_corpora:
        runs += [("DP-KPS keyphrase sequences", eps_name(e),
                  [(f"kps-keyphrases-eps{eps_name(e)}-s{s}",
                    lambda _, e=e, s=s: kps_release(train, e, s, timed)) for s in args.seeds])
                 for e in args.epsilons]
    if args.documents is None:
        return runs
    cells = document_cells(args.documents, corpus)
    for n in sorted({n for _, _, n in cells}):
        runs.append((f"copy control: {n} members a class", "–",
                     [(f"copy-n{n}-s{s}", lambda _, n=n, s=s: sample_release(corpus, n, s))
                      for s in args.seeds]))
    for (method, eps, n), folders in sorted(cells.items(), key=lambda kv: (
            kv[0][0], kv[0][2], -1 if kv[0][1] is None else kv[0][1])):
        runs.append((f"{METHOD_NAMES.get(method, method)} documents, {n} a class",
                     "–" if eps is None else eps_name(eps),
                     [(f.name, lambda _, f=f: documents_release(f)) for f in folders]))
    return runs


def main() -> None:
    ap = study_parser(__doc__, corpora=["bbc-news"], epsilons=[6, math.inf], seeds=[0, 1, 2])
    add_list(ap, "--keyphrase-corpora", default=["bbc-news"],
             help="the corpora whose DP-KPS keyphrase releases are scored (a fit per ε "
                  "and seed)")
    ap.add_argument("--documents", type=Path, default=None,
                    help="a whole-documents work directory (bench_whole_documents.py "
                         "--work-dir): score its finished cells' documents too")
    ap.add_argument("--results", type=Path, default=RESULTS,
                    help="the result store: a release scored there is not scored again")
    args = ap.parse_args()
    store = ResultStore(args.results, ("corpus", "release"))
    timed = TimedEmbedder(load_embedder("minilm"))  # in-memory memo only: real documents
    encoder = UnitRows(timed)
    rows, sizes = [], {}
    for corpus in args.corpora:
        train = read_corpus(f"demo:{corpus}/train")
        private, test = from_corpus(train), from_corpus(read_corpus(f"demo:{corpus}/test"))
        for name, eps_label, makers in releases_of(corpus, args, train, timed):
            results = []
            for seed, (key, make) in enumerate(makers):
                cell = {"corpus": corpus, "release": key}
                res = store.get(cell)
                if res is None:
                    t = time.perf_counter()
                    scored = membership(make(private), private, test, encoder, seed)
                    res = {**cell, "members": len(private), "non_members": len(test),
                           "n_members": scored["n_members"], "attacks": {
                               k: {f: v[f] for f in ("auc", "auc_ci", "tpr_at_fpr")}
                               for k, v in scored["attacks"].items()},
                           "seconds": round(time.perf_counter() - t, 1)}
                    store.add(res)
                results.append(res)
                sizes[corpus] = (res["members"], res["non_members"], res["n_members"])
                print(f"{corpus}: {name} ε={eps_label} {key}: " + ", ".join(
                    f"{k} AUC {v['auc']:.3f} TPR {v['tpr_at_fpr']:.3f}"
                    for k, v in res["attacks"].items()), flush=True)
            rows += summary_rows(corpus, name, eps_label, results)
    body = markdown_table(["corpus", "release", "ε", "seeds", "attack", "AUC",
                           "95 % intervals (all seeds)", f"TPR at {TARGET_FPR:.0%} FPR"], rows)
    alone = sorted({f"{r[0]}, {r[1]}" for r in rows if r[2] not in ("–", "∞")}
                   - {f"{r[0]}, {r[1]}" for r in rows if r[2] == "∞"})
    if alone:  # a DP figure stands beside its ε → ∞ limit, or says it cannot yet
        body += ("\n\nNot yet beside their ε → ∞ rows (those cells are not finished): "
                 + "; ".join(alone) + ".")
    print(body)
    if args.write:
        record("membership", "Membership inference: synthetic releases, the LLM-only floor "
               "and copy controls", (
            "Members: each corpus's training split; non-members: its test split, matched "
            "within each class (" + "; ".join(
                f"{c}: {m:,} and {n:,} documents, {k} a side" for c, (m, n, k) in
                sizes.items()) + "). The evaluation suite's membership section (`dptext "
            "evaluate --private`, MiniLM embeddings), one row per release over its seeds "
            "(mean ± sd, ddof = 1; the interval column spans the lowest and highest bound "
            "of the per-seed 95 % bootstrap intervals). DP-KPS keyphrase sequences: the "
            f"constructor's defaults, {PER_CLASS} sequences per class, δ = 1e-5, ε → ∞ "
            f"fitted at ε = {INF_EPSILON:g}; scored under the keyphrase-only protocol (real "
            "documents as phrase sequences over the released vocabulary); they are drawn "
            "from a public vocabulary of common English words, so they hold no rare n-gram "
            "and the rare n-gram attack's AUC is 0.5 by construction. Whole documents: the "
            "cells of `bench_whole_documents.py` (that protocol: `dptext.synthesize` with "
            "the generator's defaults at total ε, qwen2.5-0.5b through llama.cpp, the "
            "corpus's token cap), their run folders under `benchmarks/results/membership/`; "
            "the LLM-only floor's documents are written from uniformly drawn public words "
            "with random labels, so nothing in them depends on the members: the attacks' "
            "null on LLM-written text of that size. "
            "Copy controls, scored as whole documents: a verbatim copy of a fifth of the "
            "training documents (AUC about 0.5 + 0.2 / 2 = 0.6 if the members not copied "
            "look like non-members, TPR at 1 % FPR about 0.2), and one as large as the "
            "synthetic sets (the whole-documents cells' `real` sample): what an attack "
            "resolves at that size when the release holds private documents verbatim. "
            "Chance is an AUC of 0.5 and a TPR of 0.01.\n\n" + body))


if __name__ == "__main__":
    main()
