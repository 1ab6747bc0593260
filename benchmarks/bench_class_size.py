"""Does the noise cost more where classes are small? DP-KPS keyphrases fitted on a corpus's
train split and on random fractions of it, at ε = 6 and its ε → ∞ limit.

At ε = 6 the noise costs Banking77 about 0.06 of whole-document accuracy (its 77 intents
have about 130 training documents each) and BBC or the complaints hardly anything (340 and
1,250 per class). The DP releases' noise does not shrink with the data, their signal
does: if small classes are the cause, fitting on half or a quarter of the train split (each
class shrinks alike) should widen the gap between ε = 6 and ε → ∞ at the same test. Each
cell is the keyphrase-models benchmark's (``bench_keyphrase_models.CorpusBench.cell``: the
default ``KeyphraseSeeder``, 300 sequences per class for more than 16 classes, MiniLM +
logistic regression; A: the table-5 protocol, B: whole real test documents) with only the
train split replaced. No LLM is involved.

    nice -n 10 python benchmarks/bench_class_size.py --corpus banking77 \\
        --fractions 1,0.5,0.25 --seeds 0,1,2
    python benchmarks/bench_class_size.py --report --write

Resumable: each cell is appended to ``class-size/results.jsonl`` in the work directory
(keyed by corpus, fraction, ε, seed and the tree of ``src/``); no text is written.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from collections import Counter
from pathlib import Path

import numpy as np

from bench_keyphrase_models import (
    TEST_DOCS,
    CorpusBench,
    TimedEmbedder,
    append_row,
    eps_name,
    load_rows,
    mean_sd,
    src_tree,
)
from bench_keyphrase_utility import sample
from dptext.embed import load_embedder
from record import bench_dir, command_line, markdown_table, record

SECTION = "class-size"
EPSILONS = (6.0, math.inf)


def key(corpus: str, fraction: float, eps: str, seed: int, src: str) -> tuple:
    return (corpus, fraction, eps, seed, src)


def run(args, results: Path, src: str) -> None:
    done = {key(r["corpus"], r["fraction"], r["epsilon"], r["seed"], r["src"])
            for r in load_rows(results)}
    embedder = load_embedder("minilm")  # no disk cache: it embeds real documents
    timed = TimedEmbedder(embedder)
    bench = CorpusBench(args.corpus, embedder, results.parent, TEST_DOCS, 0)
    full = bench.train
    for fraction in args.fractions:
        # one fixed subsample per fraction (seed 0), the same for every ε and seed
        bench.train = full if fraction == 1 else sample(full, round(fraction * len(full)))
        per_class = Counter(bench.train.labels).values()
        for eps in EPSILONS:
            for seed in args.seeds:
                if key(args.corpus, fraction, eps_name(eps), seed, src) in done:
                    continue
                t, load = time.perf_counter(), os.getloadavg()[0]
                out = bench.cell("default", eps, seed, timed)
                append_row(results, {
                    "corpus": args.corpus, "fraction": fraction, "epsilon": eps_name(eps),
                    "seed": seed, "src": src, "load": load, "command": command_line(),
                    "docs_per_class_median": float(np.median(list(per_class))),
                    "docs_per_class_min": min(per_class), **out,
                    "wall_s": time.perf_counter() - t})
                print(f"{args.corpus} × {fraction} ε={eps_name(eps)} seed {seed}: "
                      f"A {out['acc_A']:.3f}  B {out['acc_B']:.3f}  "
                      f"wall {time.perf_counter() - t:.0f} s", flush=True)


def report(rows: list[dict], corpus: str, src: str) -> str:
    rows = [r for r in rows if r["corpus"] == corpus and r["src"] == src]
    table = []
    for fraction in sorted({r["fraction"] for r in rows}, reverse=True):
        at = {e: [r for r in rows if r["fraction"] == fraction and r["epsilon"] == e]
              for e in (eps_name(e) for e in EPSILONS)}
        dp, inf = at[eps_name(6.0)], at[eps_name(math.inf)]
        if not dp or not inf:
            continue

        def gap(acc: str, dp=dp, inf=inf) -> str:
            return f"{np.mean([r[acc] for r in inf]) - np.mean([r[acc] for r in dp]):.3f}"

        first = dp[0]
        table.append([f"{fraction:g}", first["train_docs"],
                      f"{first['docs_per_class_median']:.0f} (min {first['docs_per_class_min']})",
                      len(dp), mean_sd([r["acc_B"] for r in dp]),
                      mean_sd([r["acc_B"] for r in inf]), gap("acc_B"),
                      mean_sd([r["acc_A"] for r in dp]),
                      mean_sd([r["acc_A"] for r in inf]), gap("acc_A")])
    runs = sorted({r["command"] for r in rows})
    return (
        f"Corpus {corpus}: DP-KPS with its defaults fitted on the train split and on fixed "
        "random fractions of it (seed 0; every class shrinks alike), at ε = 6 and at its "
        "ε → ∞ limit (ε = 1e3), δ = 1e-5; the keyphrase-models section's cell otherwise "
        "(300 sequences per class for more than 16 classes, MiniLM + logistic regression; "
        "B: whole real test documents, A: the table-5 protocol; the same fixed test sample "
        f"of ≤ {TEST_DOCS} documents). Mean ± sd over seeds (ddof = 1); "
        "\"∞ − 6\": the difference of the means, what the noise costs. OpenDP's noise "
        "cannot be seeded, so a seed fixes the sampling, not the noise. Computed by: "
        + "; ".join(f"`{c}`" for c in runs) + ".\n\n"
        + markdown_table(["fraction", "train docs", "docs per class: median", "seeds",
                          "B at ε = 6", "B at ε → ∞", "B: ∞ − 6", "A at ε = 6", "A at ε → ∞",
                          "A: ∞ − 6"], table))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default="banking77")
    ap.add_argument("--fractions", default="1,0.5,0.25",
                    help="comma list of fractions of the train split")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--work-dir", type=Path, default=None,
                    help="results and embeddings (default: $DPTEXT_BENCH_DIR or "
                         "~/.cache/dptext-bench, then class-size/)")
    ap.add_argument("--report", action="store_true", help="only print the table")
    ap.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    args = ap.parse_args()
    args.fractions = [float(f) for f in args.fractions.split(",")]
    args.seeds = [int(s) for s in args.seeds.split(",")]
    work = args.work_dir or bench_dir(SECTION)
    results, src = work / "results.jsonl", src_tree()
    if not args.report:
        run(args, results, src)
    text = report(load_rows(results), args.corpus, src)
    print(text)
    if args.write:
        record(SECTION, "Does the noise cost more where classes are small? (DP-KPS keyphrases)",
               text)


if __name__ == "__main__":
    main()
