"""`--engine ray` against the local engine: the same releases and the same utility.

For each corpus and seed, DP-KPS with its defaults (ε = 6, δ = 1e-5) is fitted twice on the
train split, side by side in one process: once on the local engine and once with the
corpus-wide sums on a Ray cluster started here (`--workers` CPUs, the loopback of this
machine). The noise is drawn by OpenDP and cannot be seeded, so two runs never give the
same sequences — not even on one engine; what must match is (1) every release record
(stage, partition, sensitivity, noise scale, dimension), which fixes the mechanism and ε,
and (2) the utility, within seed variation, under both protocols of
`bench_keyphrase_models.py` (A: the first L released terms of real test documents;
B: whole real test documents; the same classifier: MiniLM + logistic regression on 500
sequences per class, 300 for Banking77).

Cells go to `ray-parity/results.jsonl` in the bench folder (resumable; keyed by the tree
of `src/`). ``--report`` writes the table only (``--write``: into docs/benchmarks.md).

    nice -n 10 python benchmarks/bench_ray_parity.py --write
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from bench_keyphrase_models import (
    CEILING_DOCS,
    TEST_DOCS,
    CorpusBench,
    TimedEmbedder,
    append_row,
    default_work_dir,
    load_rows,
    mean_sd,
    src_tree,
)
from dptext.compute import use_engine
from dptext.embed import load_embedder
from record import command_line, markdown_table, record

CORPORA = ("bbc-news", "health-tweets", "complaints", "banking77")
EPSILON = 6.0


def report(rows: list[dict], corpora: list[str], src: str) -> str:
    table = []
    for corpus in corpora:
        cells = {e: [r for r in rows if r["corpus"] == corpus and r["engine"] == e
                     and r["src"] == src] for e in ("local", "ray")}
        if not cells["local"] or not cells["ray"]:
            continue
        records = {e: {tuple(map(tuple, r["releases"])) for r in v} for e, v in cells.items()}
        same = "yes" if len(records["local"] | records["ray"]) == 1 else "**no**"
        table.append([corpus, f"{len(cells['local'])} / {len(cells['ray'])}",
                      mean_sd([r["acc_A"] for r in cells["local"]]),
                      mean_sd([r["acc_A"] for r in cells["ray"]]),
                      mean_sd([r["acc_B"] for r in cells["local"]]),
                      mean_sd([r["acc_B"] for r in cells["ray"]]), same,
                      f"{statistics.fmean(r['fit_s'] for r in cells['local']):.1f} / "
                      f"{statistics.fmean(r['fit_s'] for r in cells['ray']):.1f}"])
    return markdown_table(["corpus", "seeds local / ray", "A local", "A ray", "B local",
                           "B ray", "release records identical", "fit s local / ray"], table)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpora", default=",".join(CORPORA))
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--workers", type=int, default=2, help="CPUs of the Ray cluster")
    ap.add_argument("--report", action="store_true")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    corpora, seeds = args.corpora.split(","), [int(s) for s in args.seeds.split(",")]
    models_dir = default_work_dir()  # the embeddings cached by bench_keyphrase_models
    results = models_dir.parent / "ray-parity" / "results.jsonl"
    src = src_tree()
    if not args.report:
        import ray

        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False,
                 logging_level="WARNING")  # one cluster for every Ray cell (left open)
        done = {(r["corpus"], r["seed"], r["engine"]) for r in load_rows(results)
                if r["src"] == src}
        embedder = load_embedder("minilm")  # no disk cache: it embeds real documents
        timed = TimedEmbedder(embedder)
        for corpus in corpora:
            bench = CorpusBench(corpus, embedder, models_dir, TEST_DOCS, CEILING_DOCS)
            for seed in seeds:
                for engine in ("local", "ray"):  # side by side, per seed
                    if (corpus, seed, engine) in done:
                        continue
                    t = time.perf_counter()
                    with use_engine(engine, "auto" if engine == "ray" else None):
                        out = bench.cell("default", EPSILON, seed, timed)
                    row = {"corpus": corpus, "seed": seed, "engine": engine, "src": src,
                           "load": os.getloadavg()[0], "command": command_line(), **out,
                           "wall_s": time.perf_counter() - t}
                    append_row(results, row)
                    print(f"{corpus} seed {seed} {engine}: A {out['acc_A']:.3f}  "
                          f"B {out['acc_B']:.3f}  fit {out['fit_s']:.1f} s", flush=True)
        ray.shutdown()
    rows = load_rows(results)
    # the cells of the last code measured (a report after later commits shows those)
    src = rows[-1]["src"] if rows and args.report else src
    body = report(rows, corpora, src)
    print(body)
    if args.write:
        record("ray-parity", "--engine ray against the local engine (DP-KPS, ε = 6)", (
            "DP-KPS with its defaults, fitted on each corpus's train split on the local "
            f"engine and on a Ray cluster of {args.workers} CPUs on this machine, side by side "
            "per seed (seeds " + ", ".join(map(str, seeds)) + "; mean ± sd, ddof = 1). "
            "OpenDP's noise cannot be seeded, so no two runs share their sequences; the "
            "mechanisms are compared by their release records (stage, partition, "
            "sensitivity, noise scale, dimension — every one identical or not) and the "
            "utility by the two protocols of the keyphrase-models section (A: table-5 "
            "protocol; B: whole real test documents). The exact sums before noise are equal "
            "bit for bit (`tests/test_ray_engine.py`). Fit time excludes embedding; on one "
            f"2-core machine Ray adds its task overhead and gains no cores. Code: `src/` "
            f"tree {src}; cells computed by " + ", ".join(sorted(
                {f"`{r['command']}`" for r in rows if r["src"] == src})) + ".\n\n" + body))


if __name__ == "__main__":
    main()
